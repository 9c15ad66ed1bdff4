package fxelection_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
)

// batchLog wraps the in-memory backend, batching, and records when each
// election was acquired and renewed (the time of the call, which on fake
// time is when the elector asked) and how many calls the batches took.
type batchLog struct {
	*fxelection.MemoryBackend
	mu      sync.Mutex
	times   map[string][]time.Time // election → acquisition, then renewals
	batches int
	renewed int
	largest int
}

func (b *batchLog) Acquire(ctx context.Context, req fxelection.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.MemoryBackend.Acquire(ctx, req)
	if err == nil {
		b.mu.Lock()
		b.times[req.Election] = append(b.times[req.Election], time.Now())
		b.mu.Unlock()
	}
	return l, err
}

func (b *batchLog) Renew(context.Context, fxelection.Lease) (fxelection.Lease, error) {
	panic("renewals must go through RenewBatch")
}

func (b *batchLog) RenewBatch(ctx context.Context, leases []fxelection.Lease) []fxelection.RenewResult {
	now := time.Now()
	b.mu.Lock()
	b.batches++
	b.renewed += len(leases)
	b.largest = max(b.largest, len(leases))
	for _, l := range leases {
		b.times[l.Election] = append(b.times[l.Election], now)
	}
	b.mu.Unlock()
	return b.MemoryBackend.RenewBatch(ctx, leases)
}

// TestBatchedRenewalsNeverLate runs 300 electors on one batching backend
// for 40 retry periods of fake time: renewals go out in batches (far fewer
// calls than renewals), and no election's renewal ever comes later than
// RetryPeriod after its acquisition or its previous renewal.
func TestBatchedRenewalsNeverLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		be := &batchLog{MemoryBackend: fxelection.NewMemoryBackend(), times: map[string][]time.Time{}}
		es := make([]*fxelection.Elector, n)
		for i := range es {
			c := cfg("a")
			c.Name = fmt.Sprintf("batch-%d", i)
			es[i] = start(t, c, be)
		}
		time.Sleep(40 * retry)
		synctest.Wait()
		for _, e := range es {
			if !e.IsLeader() {
				t.Fatalf("%s does not lead", e.Status().Election)
			}
			if err := e.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		be.mu.Lock()
		defer be.mu.Unlock()
		for name, ts := range be.times {
			if len(ts) < 38 {
				t.Fatalf("%s: %d acquisitions and renewals in 40 retry periods", name, len(ts))
			}
			for j := 1; j < len(ts); j++ {
				if gap := ts[j].Sub(ts[j-1]); gap > retry {
					t.Fatalf("%s: renewal %d came %v after the previous, more than RetryPeriod %v", name, j, gap, retry)
				}
			}
		}
		// 300 renewals per RetryPeriod fall in 64 slots (about 4.7 per
		// slot), and a slot's renewals may be split over up to 4 batches
		// in flight, depending on how the goroutines are scheduled (the
		// race detector changes it): require two renewals per call on
		// average, which is far below one call per renewal and does not
		// depend on the scheduling.
		if be.renewed < 30*n || be.batches*2 > be.renewed {
			t.Fatalf("%d renewals in %d batches (largest %d): not batched", be.renewed, be.batches, be.largest)
		}
		t.Logf("%d renewals in %d batches (largest %d)", be.renewed, be.batches, be.largest)
	})
}

// TestChaosBatched is TestChaos with every candidate renewing through
// RenewBatch (electiontest.BatchFaulty).
func TestChaosBatched(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				chaosWith(t, seed, func(b fxelection.Backend) chaosBackend { return electiontest.NewBatchFaulty(b) })
			})
		})
	}
}

// TestStopManyElectorsNoLeak starts 10,000 electors on one batching
// backend, lets them lead and renew, stops them all, and checks that no
// goroutine is left behind.
func TestStopManyElectorsNoLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10000
		be := fxelection.NewMemoryBackend()
		es := make([]*fxelection.Elector, n)
		for i := range es {
			c := cfg("a")
			c.Name = fmt.Sprintf("many-%d", i)
			es[i] = start(t, c, be)
		}
		time.Sleep(retry + retry/2) // every one has renewed once
		synctest.Wait()
		leading := 0
		for _, e := range es {
			if e.IsLeader() {
				leading++
			}
		}
		if leading != n {
			t.Fatalf("%d of %d lead", leading, n)
		}
		for _, e := range es {
			if err := e.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
	goleak.VerifyNone(t)
}
