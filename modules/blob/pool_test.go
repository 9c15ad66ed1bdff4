package bloblease_test

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/pool"
	"github.com/fxelection/fxelection/internal/electiontesting"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// TestPoolSpreadsWithDefaultTimings: a pool on Azure Blob with the default
// timings (LeaseDuration 15s, RenewDeadline 10s) spreads over two workers.
// Its member slots are leases of the backend's 15s minimum, not of
// RenewDeadline, which Azure refuses (every member slot refused, the first
// worker keeping every shard).
func TestPoolSpreadsWithDefaultTimings(t *testing.T) {
	var b backendkit.Backend = newBackend(t, bloblease.Options{})
	if got := backendkit.MinLeaseDuration(b); got != bloblease.MinDuration {
		t.Fatalf("MinLeaseDuration %v, want %v", got, bloblease.MinDuration)
	}
	name := electiontesting.Election(t)
	shards := []string{"a", "b", "c", "d"}
	var pools []*pool.Pool
	start := func(id string) *pool.Pool {
		p, err := pool.New(pool.Config{Name: name, Identity: id, Shards: shards}, newBackend(t, bloblease.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pools = append(pools, p)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.Stop(ctx); err != nil {
				t.Errorf("stop %s: %v", id, err)
			}
		})
		return p
	}
	// The first worker takes every shard and finishes its first round
	// (its member slot taken, or refused) before the second starts.
	w1 := start("w1")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st := w1.Status(); st.Owned == len(shards) && (st.Slot >= 0 || st.SlotFailures > 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker did not take every shard and a member slot: %+v", w1.Status())
		}
	}
	start("w2")
	// Bound: the joiner renews its slot after one RetryPeriod (2s), the
	// other reads it within another and hands over; a LeaseDuration of
	// slack for each step on a loaded machine.
	deadline := time.Now().Add(4 * 15 * time.Second)
	for {
		s1, s2 := pools[0].Status(), pools[1].Status()
		if s1.Owned == 2 && s2.Owned == 2 {
			if s1.SlotRefused != 0 || s2.SlotRefused != 0 || s1.Slot < 0 || s2.Slot < 0 {
				t.Errorf("member slots: w1 %+v, w2 %+v, want both held and none refused", s1, s2)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not spread over two workers within 60s: w1 %+v, w2 %+v", s1, s2)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
