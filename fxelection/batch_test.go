package fxelection_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/testtier"
)

// batchLog wraps the in-memory backend, batching, and records when each
// election was acquired and renewed (the time of the call, which on fake
// time is when the elector asked) and how many calls the batches took.
type batchLog struct {
	*memory.Backend
	mu      sync.Mutex
	times   map[string][]time.Time // election → acquisition, then renewals
	batches int
	renewed int
	largest int
}

func (b *batchLog) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.Backend.Acquire(ctx, req)
	if err == nil {
		b.mu.Lock()
		b.times[req.Election] = append(b.times[req.Election], time.Now())
		b.mu.Unlock()
	}
	return l, err
}

func (b *batchLog) AcquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	now := time.Now()
	res := b.Backend.AcquireBatch(ctx, reqs)
	b.mu.Lock()
	for i, r := range res {
		if r.Err == nil {
			b.times[reqs[i].Election] = append(b.times[reqs[i].Election], now)
		}
	}
	b.mu.Unlock()
	return res
}

func (b *batchLog) Renew(context.Context, fxelection.Lease) (fxelection.Lease, error) {
	panic("renewals must go through RenewBatch")
}

func (b *batchLog) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	now := time.Now()
	b.mu.Lock()
	b.batches++
	b.renewed += len(leases)
	b.largest = max(b.largest, len(leases))
	for _, l := range leases {
		b.times[l.Election] = append(b.times[l.Election], now)
	}
	b.mu.Unlock()
	return b.Backend.RenewBatch(ctx, leases)
}

// TestBatchedRenewalsNeverLate runs 300 electors on one batching backend
// for 40 retry periods of fake time: renewals go out in batches (far fewer
// calls than renewals), and no election's renewal ever comes later than
// RetryPeriod after its acquisition or its previous renewal.
func TestBatchedRenewalsNeverLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		be := &batchLog{Backend: memory.New(), times: map[string][]time.Time{}}
		g := newGroup(t, be)
		es := make([]*fxelection.Elector, n)
		for i := range es {
			c := cfg("a")
			c.Name = fmt.Sprintf("batch-%d", i)
			es[i] = startIn(t, c, g)
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
// RenewBatch (faultinject.BatchBackend): one seed in the default tier,
// two in TestSoakChaosBatched.
func TestChaosBatched(t *testing.T) { chaosSeeds(t, 1, batchedFaults) }

// TestSoakChaosBatched is TestChaosBatched with seeds 0 and 1.
func TestSoakChaosBatched(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	chaosSeeds(t, 2, batchedFaults)
}

// batchedFaults wraps a backend in faultinject's faults, renewing through
// RenewBatch.
func batchedFaults(b fxelection.Backend) chaosBackend { return faultinject.NewBatch(b) }

// TestStopManyElectorsNoLeak starts 10,000 electors on one batching
// backend, lets them lead and renew, stops them all, and checks that no
// goroutine is left behind.
func TestStopManyElectorsNoLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10000
		g := newGroup(t, memory.New())
		es := make([]*fxelection.Elector, n)
		for i := range es {
			c := cfg("a")
			c.Name = fmt.Sprintf("many-%d", i)
			es[i] = startIn(t, c, g)
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

// gatedBackend is the in-memory backend whose Acquire waits until open is
// closed (or its context is done), counting the calls waiting at once and
// the elections asked for. It does not acquire in batches, so that first
// steps wait in Acquire on the group's start workers.
type gatedBackend struct {
	renewingMemory
	open    chan struct{}
	mu      sync.Mutex
	waiting int
	most    int
	asked   map[string]bool
}

func newGatedBackend() *gatedBackend {
	return &gatedBackend{renewingMemory: memory.New(), open: make(chan struct{}), asked: map[string]bool{}}
}

func (b *gatedBackend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	b.mu.Lock()
	b.asked[req.Election] = true
	b.waiting++
	b.most = max(b.most, b.waiting)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
	}()
	select {
	case <-b.open:
	case <-ctx.Done():
		return fxelection.Lease{}, ctx.Err()
	}
	return b.renewingMemory.Acquire(ctx, req)
}

// renewingMemory is the in-memory backend without its
// backendkit.BatchAcquirer.
type renewingMemory interface {
	fxelection.Backend
	backendkit.BatchRenewer
	backendkit.Notifier
	backendkit.NamedBackend
}

func (b *gatedBackend) counts() (waiting, most int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting, b.most
}

func startGated(t *testing.T, b *gatedBackend, n int) []*fxelection.Elector {
	t.Helper()
	g := newGroup(t, b)
	es := make([]*fxelection.Elector, n)
	for i := range es {
		e, err := g.New(fxelection.Config{Name: fmt.Sprintf("gated-%d", i), Identity: "me"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		es[i] = e
	}
	return es
}

// TestStartSharesWorkers checks that Start does not give every elector a
// goroutine: electors started together on one backend take their first
// step on at most 16 shared workers, and one more is started once a
// 50ms check finds that none of them finished a task since the previous
// check (here they are stuck in an Acquire that waits; the first check,
// at 50ms, still sees the subscriptions they made before getting stuck).
func TestStartSharesWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newGatedBackend()
		es := startGated(t, b, 100)
		synctest.Wait()
		if waiting, _ := b.counts(); waiting != 16 {
			t.Fatalf("first attempts in flight = %d, want 16 (the shared workers)", waiting)
		}
		time.Sleep(120 * time.Millisecond)
		synctest.Wait()
		if waiting, _ := b.counts(); waiting != 17 {
			t.Fatalf("after 120ms stuck: first attempts in flight = %d, want 17", waiting)
		}
		close(b.open)
		synctest.Wait()
		for _, e := range es {
			if !e.IsLeader() {
				t.Fatalf("%s does not lead", e.Config().Name)
			}
		}
		if _, most := b.counts(); most > 17 {
			t.Fatalf("up to %d first attempts at once, want at most 17", most)
		}
		for _, e := range es {
			if err := e.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestStopWithdrawsQueuedStart checks that Stop of an elector whose first
// step still waits for a shared worker takes it out of the queue and
// returns at once: no Acquire is made for it.
func TestStopWithdrawsQueuedStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newGatedBackend()
		es := startGated(t, b, 20)
		synctest.Wait()
		last := es[len(es)-1]
		start := time.Now()
		if err := last.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("Stop took %v of fake time, want none", d)
		}
		if st := last.Status(); st.Running || st.Holding {
			t.Fatalf("stopped elector's status: %+v", st)
		}
		close(b.open)
		synctest.Wait()
		b.mu.Lock()
		asked := b.asked[last.Config().Name]
		b.mu.Unlock()
		if asked {
			t.Fatal("Acquire was called for the elector stopped while queued")
		}
		for _, e := range es[:len(es)-1] {
			if !e.IsLeader() {
				t.Fatalf("%s does not lead", e.Config().Name)
			}
			if err := e.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLeaderContextDerived checks the leader context as a parent: a
// context derived from it and a context.AfterFunc on it are cancelled
// when the leadership ends (here by Stop), it carries the lease and
// Start's context's values, and it has no deadline.
func TestLeaderContextDerived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		got := make(chan context.Context, 1)
		e, err := fxelection.New(fxelection.Config{Name: "derived", Identity: "me", Callbacks: fxelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) { got <- ctx; <-ctx.Done() },
		}}, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.WithValue(context.Background(), key{}, "v")); err != nil {
			t.Fatal(err)
		}
		ctx := <-got
		if _, ok := ctx.Deadline(); ok {
			t.Fatal("leader context has a deadline")
		}
		if ctx.Value(key{}) != "v" {
			t.Fatal("leader context lost Start's context's value")
		}
		l, ok := fxelection.LeaseFromContext(ctx)
		if lease, _ := e.Lease(); !ok || l.Term != lease.Term || l.Holder != "me" {
			t.Fatalf("LeaseFromContext = %+v, %v", l, ok)
		}
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		after := make(chan struct{})
		context.AfterFunc(ctx, func() { close(after) })
		if child.Err() != nil || ctx.Err() != nil {
			t.Fatal("cancelled while leading")
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-after
		if !errors.Is(child.Err(), context.Canceled) || !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("after Stop: child %v, leader context %v", child.Err(), ctx.Err())
		}
	})
}

// probed is the in-memory backend (a backendkit.BatchRenewer) behind a backendkit.BatchProber
// that says whether it may batch, counting both kinds of renewal.
type probed struct {
	*memory.Backend
	batches    bool
	mu         sync.Mutex
	direct, in int
}

func (p *probed) CanRenewBatch() bool { return p.batches }

func (p *probed) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	p.mu.Lock()
	p.direct++
	p.mu.Unlock()
	return p.Backend.Renew(ctx, l)
}

func (p *probed) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	p.mu.Lock()
	p.in += len(leases)
	p.mu.Unlock()
	return p.Backend.RenewBatch(ctx, leases)
}

// TestOnItsOwnRenewsDirectly: electors made with New, not in a Group, renew
// lease by lease even on a backend that batches, and take their first step
// on goroutines of their own; in a Group on the same backend they batch.
func TestOnItsOwnRenewsDirectly(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		t.Run(fmt.Sprint("grouped=", grouped), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &probed{Backend: memory.New(), batches: true}
				g := newGroup(t, p)
				for i := range 10 {
					c := cfg("a")
					c.Name = fmt.Sprintf("own-%d", i)
					if grouped {
						startIn(t, c, g)
					} else {
						start(t, c, p)
					}
				}
				time.Sleep(10 * retry)
				synctest.Wait()
				p.mu.Lock()
				defer p.mu.Unlock()
				if grouped && (p.in < 80 || p.direct != 0) || !grouped && (p.direct < 80 || p.in != 0) {
					t.Fatalf("grouped %v: %d renewals in batches, %d direct", grouped, p.in, p.direct)
				}
			})
		})
	}
}

// TestBatchProber: an elector on a backendkit.BatchRenewer that is also a backendkit.BatchProber
// batches only when CanRenewBatch says so at Start, and otherwise renews
// lease by lease (config.Build's wrapper on a store that cannot batch).
func TestBatchProber(t *testing.T) {
	for _, can := range []bool{true, false} {
		t.Run(fmt.Sprint(can), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &probed{Backend: memory.New(), batches: can}
				e := startIn(t, cfg("a"), newGroup(t, p))
				time.Sleep(10 * retry)
				synctest.Wait()
				if !e.IsLeader() {
					t.Fatal("not leading")
				}
				if err := e.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				p.mu.Lock()
				defer p.mu.Unlock()
				if can && (p.in < 8 || p.direct != 0) || !can && (p.direct < 8 || p.in != 0) {
					t.Fatalf("CanRenewBatch %v: %d renewals in batches, %d direct", can, p.in, p.direct)
				}
			})
		})
	}
}
