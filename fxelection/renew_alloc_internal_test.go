package fxelection

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/memory"
)

// maxRenewAllocs is what one renewal allocated before the policy seam
// (e04317d, the same test): the renewal's context and timer, the in-memory
// store's call and the renewed lease.
const maxRenewAllocs = 9

// TestRenewalAllocations: a renewal of an elector without policies, on a
// backend that does not batch, allocates no more than before the policy
// seam: an elector without policies costs nothing on that path. Fake time:
// the renewals run on the test's goroutine while the loop is parked and
// no timer can fire.
func TestRenewalAllocations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg := Config{Name: "a", Identity: "a", Timing: Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}}
		e, err := New(cfg, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.Stop(ctx) }()
		for !e.IsLeader() {
			time.Sleep(time.Millisecond)
		}
		synctest.Wait() // the loop is parked
		term := e.ls.t
		allocs := testing.AllocsPerRun(100, func() {
			if _, ended := e.renew(term); ended {
				t.Fatal("the leadership ended")
			}
		})
		t.Logf("allocations per renewal: %v", allocs)
		if allocs > maxRenewAllocs {
			t.Errorf("a renewal allocates %v times; want at most %d", allocs, maxRenewAllocs)
		}
	})
}
