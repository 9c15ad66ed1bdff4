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

// campaignClock is renewClock recording the instant of every Acquire too.
type campaignClock struct {
	*renewClock
	amu      sync.Mutex
	acquires []time.Time
}

func (c *campaignClock) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	c.amu.Lock()
	c.acquires = append(c.acquires, time.Now())
	c.amu.Unlock()
	return c.renewClock.Acquire(ctx, req)
}

// TestRecampaignAfterDeadline checks the wait the package doc states after
// a leadership ended by the renew deadline, on fake time: the n-th such
// loss in a row is followed by a campaign attempt after a wait drawn from
// [d/2, d), where d is RetryPeriod doubled n−1 times, at most
// LeaseDuration−RenewDeadline; a successful renewal starts the count anew.
func TestRecampaignAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &campaignClock{renewClock: &renewClock{b: memory.New()}}
		var mu sync.Mutex
		var downs []time.Time
		c := cfg("a") // lease 3s, deadline 2s, retry 500ms: the cap is 1s
		e, err := fxelection.New(c, b)
		if err != nil {
			t.Fatal(err)
		}
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventStoppedLeading && ev.Reason == fxelection.ReasonDeadline {
				mu.Lock()
				downs = append(downs, time.Now())
				mu.Unlock()
			}
		}))
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.Stop(context.Background()) }()
		synctest.Wait()
		// nextAcquire returns the first Acquire at or after t0.
		nextAcquire := func(t0 time.Time) time.Time {
			b.amu.Lock()
			defer b.amu.Unlock()
			for _, a := range b.acquires {
				if !a.Before(t0) {
					return a
				}
			}
			t.Fatalf("no Acquire after %v", t0)
			return time.Time{}
		}
		check := func(down time.Time, d time.Duration) {
			t.Helper()
			if wait := nextAcquire(down).Sub(down); wait < d/2 || wait >= d {
				t.Fatalf("campaigned %v after a renew-deadline loss, want in [%v, %v)", wait, d/2, d)
			}
		}
		b.mu.Lock()
		b.failing = true
		b.mu.Unlock()
		for {
			mu.Lock()
			n := len(downs)
			mu.Unlock()
			if n >= 3 {
				break
			}
			time.Sleep(retry)
			synctest.Wait()
		}
		time.Sleep(lease - deadline) // the third loss's wait
		synctest.Wait()
		mu.Lock()
		first := append([]time.Time(nil), downs...)
		mu.Unlock()
		check(first[0], retry)          // 500ms
		check(first[1], 2*retry)        // 1s
		check(first[2], lease-deadline) // capped at 1s
		// A renewal that succeeds starts the count anew.
		b.mu.Lock()
		b.failing = false
		b.mu.Unlock()
		for !e.IsLeader() {
			time.Sleep(retry)
			synctest.Wait()
		}
		time.Sleep(2 * retry) // renewals succeed
		b.mu.Lock()
		b.failing = true
		b.mu.Unlock()
		n := len(first)
		for {
			mu.Lock()
			more := len(downs) > n
			mu.Unlock()
			if more {
				break
			}
			time.Sleep(retry)
			synctest.Wait()
		}
		time.Sleep(2 * retry)
		synctest.Wait()
		mu.Lock()
		down := downs[n]
		mu.Unlock()
		check(down, retry)
	})
}
