package fxelection_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// renewClock is a Backend (without batching) that records the instant of
// every Renew and fails them with a store error while failing is set.
type renewClock struct {
	b *memory.Backend

	mu      sync.Mutex
	failing bool
	ok, bad []time.Time
}

func (r *renewClock) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	return r.b.Acquire(ctx, req)
}
func (r *renewClock) Release(ctx context.Context, l fxelection.Lease) error {
	return r.b.Release(ctx, l)
}
func (r *renewClock) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	return r.b.Get(ctx, election)
}
func (r *renewClock) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		r.bad = append(r.bad, time.Now())
		return fxelection.Lease{}, errors.New("store down")
	}
	r.ok = append(r.ok, time.Now())
	return r.b.Renew(ctx, l)
}

// TestRenewTiming checks the renewal timing the package doc states, on
// fake time: after a success the next renewal starts RetryPeriod after the
// start of that success; the n-th failure in a row is retried after
// min(RetryPeriod, jitter(RetryPeriod/4 × 2^(n−1))), jitter adding up to
// 20%; and the leader steps down at the renew deadline.
func TestRenewTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &renewClock{b: memory.New()}
		c := cfg("a")
		c.NoRecampaign = true // it would lead again at once, on renewals that fail
		e := start(t, c, b)
		time.Sleep(4 * retry)
		synctest.Wait()
		b.mu.Lock()
		ok := append([]time.Time(nil), b.ok...)
		b.failing = true
		b.mu.Unlock()
		if len(ok) < 3 {
			t.Fatalf("%d renewals in %v, want at least 3", len(ok), 4*retry)
		}
		for i := 1; i < len(ok); i++ {
			if gap := ok[i].Sub(ok[i-1]); gap != retry {
				t.Errorf("successful renewals %d and %d are %v apart, want RetryPeriod (%v)", i-1, i, gap, retry)
			}
		}
		last := e.Status().LastRenew
		time.Sleep(time.Until(last.Add(deadline)) + retry)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("still leading after the renew deadline without a successful renewal")
		}
		b.mu.Lock()
		bad := append([]time.Time(nil), b.bad...)
		b.mu.Unlock()
		if len(bad) < 4 {
			t.Fatalf("%d failed renewals before the deadline, want at least 4", len(bad))
		}
		if gap := bad[0].Sub(ok[len(ok)-1]); gap != retry {
			t.Errorf("the first failed renewal came %v after the last success, want RetryPeriod", gap)
		}
		for n := 1; n < len(bad); n++ {
			if bad[n].After(last.Add(deadline)) {
				t.Errorf("renewal attempt %v after the renew deadline", bad[n].Sub(last.Add(deadline)))
			}
			base := min(retry, retry/4<<(n-1))
			lo, hi := base, min(retry, base+base/5)
			if gap := bad[n].Sub(bad[n-1]); gap < lo || gap > hi {
				t.Errorf("failure %d was retried after %v, want %v to %v", n, gap, lo, hi)
			}
		}
	})
}
