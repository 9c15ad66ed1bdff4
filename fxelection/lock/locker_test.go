package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestClose: Close releases the locks still held (another Locker takes
// them at once), wakes a waiter with ErrClosed, and refuses later
// acquisitions; it is idempotent.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := newLocker(t, store, "a"), newLocker(t, store, "b")
		if _, err := a.Acquire(context.Background(), "k1"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AcquireSemaphore(context.Background(), "s", 1); err != nil {
			t.Fatal(err)
		}
		released, err := a.Acquire(context.Background(), "k2")
		if err != nil {
			t.Fatal(err)
		}
		release(t, released)
		if n := a.Held(); n != 2 {
			t.Errorf("Held %d, want 2", n)
		}
		lk, err := b.TryAcquire(context.Background(), "k1")
		if !errors.Is(err, lock.ErrLocked) {
			t.Fatalf("TryAcquire of a held key: %v, %v", lk, err)
		}
		waited := make(chan error, 1)
		go func() {
			_, err := a.Acquire(context.Background(), "k3-held-by-b")
			waited <- err
		}()
		hold, err := b.Acquire(context.Background(), "k3-held-by-b")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-waited; !errors.Is(err, lock.ErrClosed) {
			t.Errorf("waiter: %v, want ErrClosed", err)
		}
		if n := a.Held(); n != 0 {
			t.Errorf("Held %d after Close, want 0", n)
		}
		for k, try := range map[string]func() (*lock.Lock, error){
			"k1":               func() (*lock.Lock, error) { return b.TryAcquire(context.Background(), "k1") },
			"semaphore s of 1": func() (*lock.Lock, error) { return b.TryAcquireSemaphore(context.Background(), "s", 1) },
		} {
			lk, err := try()
			if err != nil {
				t.Fatalf("%s after Close: %v, want free", k, err)
			}
			release(t, lk)
		}
		if _, err := a.TryAcquire(context.Background(), "k4"); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("TryAcquire after Close: %v, want ErrClosed", err)
		}
		if _, err := a.Acquire(context.Background(), "k4"); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Acquire after Close: %v, want ErrClosed", err)
		}
		if err := a.Close(context.Background()); err != nil {
			t.Errorf("second Close: %v", err)
		}
		release(t, hold)
	})
}

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []lock.Event
}

func (r *recorder) ObserveLock(ev lock.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) take() []lock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

// TestObserver: every acquisition reports its outcome and wait; every
// Lock acquired reports exactly one release or loss.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		cut := faultinject.New(store)
		var rec recorder
		opts := fast
		opts.Identity, opts.Observer = "a", &rec
		a, err := lock.New(cut, opts)
		if err != nil {
			t.Fatal(err)
		}
		b := newLocker(t, store, "b")

		held, err := b.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = a.TryAcquire(context.Background(), "k")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, _ = a.Acquire(ctx, "k")
		cancel()
		go func() {
			time.Sleep(time.Second)
			release(t, held)
		}()
		lk, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		release(t, lk)
		release(t, lk) // idempotent: no second event
		sem, err := a.TryAcquireSemaphore(context.Background(), "s", 2)
		if err != nil {
			t.Fatal(err)
		}
		cut.Partition(true)
		<-sem.Context().Done() // lost at the renew deadline
		cut.Partition(false)
		_ = sem.Release(context.Background())

		want := []struct {
			kind    lock.EventKind
			key     string
			outcome lock.Outcome
			wait    time.Duration
			held    time.Duration
		}{
			{lock.EventAcquire, "k", lock.OutcomeLocked, 0, 0},
			{lock.EventAcquire, "k", lock.OutcomeCanceled, 3 * time.Second, 0},
			{lock.EventAcquire, "k", lock.OutcomeAcquired, time.Second, 0},
			{lock.EventRelease, "k", "", 0, time.Second},
			{lock.EventAcquire, "s", lock.OutcomeAcquired, 0, 0},
			{lock.EventLost, "s", "", 0, fast.RenewDeadline},
		}
		got := rec.take()
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			g := got[i]
			if g.Kind != w.kind || g.Key != w.key || g.Outcome != w.outcome || g.Wait != w.wait || g.Held != w.held {
				t.Errorf("event %d: %+v, want %+v", i, g, w)
			}
		}
		if got[4].Semaphore != 2 || got[0].Semaphore != 0 {
			t.Errorf("Semaphore %d and %d, want 2 and 0", got[4].Semaphore, got[0].Semaphore)
		}
		if !errors.Is(got[1].Err, context.DeadlineExceeded) || !errors.Is(got[5].Err, lock.ErrLost) || got[2].Err != nil {
			t.Errorf("errors %v, %v, %v: want the deadline, nil, ErrLost", got[1].Err, got[2].Err, got[5].Err)
		}
	})
}

// TestRenewalsBatched: on a backend that renews in batches, a Locker's
// locks are renewed through RenewBatch, never one Renew call each, and
// locks of a Locker made with NewInGroup share the batches of the group's
// electors.
func TestRenewalsBatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := faultinject.NewBatch(memory.New())
		counted := &batchCounter{BatchBackend: store}
		g, err := fxelection.NewGroup(counted)
		if err != nil {
			t.Fatal(err)
		}
		l, err := lock.NewInGroup(g, fast)
		if err != nil {
			t.Fatal(err)
		}
		e, err := g.New(fxelection.Config{Name: "elected", Identity: "e",
			Timing: fxelection.Timing{LeaseDuration: fast.LeaseDuration, RenewDeadline: fast.RenewDeadline, RetryPeriod: fast.RetryPeriod}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.Stop(context.Background()) }()
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("the elector does not lead")
		}
		// The elector renews at a random point of the period (its first
		// renewal is spread); a lock in every slot of the grid shares its
		// slot.
		var held []*lock.Lock
		for i := range 64 {
			lk, err := l.Acquire(context.Background(), fmt.Sprintf("k%d", i))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, lk)
			time.Sleep(fast.RetryPeriod / 64)
		}
		time.Sleep(5 * fast.RetryPeriod)
		for _, lk := range held {
			if lk.Context().Err() != nil {
				t.Fatalf("lock lost: %v", context.Cause(lk.Context()))
			}
			release(t, lk)
		}
		calls, leases, mixed := counted.counts()
		if calls == 0 || leases < 64*4 {
			t.Errorf("%d RenewBatch calls renewed %d leases, want at least 256 renewals in batches", calls, leases)
		}
		if mixed == 0 {
			t.Error("no RenewBatch call carried both the elector's lease and a lock's")
		}
		t.Logf("%d renewals in %d RenewBatch calls, %d of them shared with the elector", leases, calls, mixed)
	})
}

// batchCounter counts RenewBatch calls and the leases in them. It has no
// Renew of its own: a direct Renew would go to the wrapped backend.
type batchCounter struct {
	*faultinject.BatchBackend
	mu                   sync.Mutex
	calls, leases, mixed int
}

func (c *batchCounter) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	c.mu.Lock()
	c.calls++
	c.leases += len(leases)
	elector, locks := false, false
	for _, l := range leases {
		if l.Election == "elected" {
			elector = true
		} else {
			locks = true
		}
	}
	if elector && locks {
		c.mixed++
	}
	c.mu.Unlock()
	return c.BatchBackend.RenewBatch(ctx, leases)
}

func (c *batchCounter) counts() (calls, leases, mixed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.leases, c.mixed
}

// TestRenewalsOfOneLockerBatched: locks of one Locker taken together are
// renewed together, in fewer RenewBatch calls than renewals.
func TestRenewalsOfOneLockerBatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counted := &batchCounter{BatchBackend: faultinject.NewBatch(memory.New())}
		l := newLocker(t, counted, "a")
		var held []*lock.Lock
		for i := range 10 {
			lk, err := l.Acquire(context.Background(), fmt.Sprintf("k%d", i))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, lk)
		}
		time.Sleep(5 * fast.RetryPeriod)
		for _, lk := range held {
			release(t, lk)
		}
		calls, leases, _ := counted.counts()
		if leases < 40 || calls >= leases {
			t.Errorf("%d renewals in %d RenewBatch calls, want at least 40 in fewer calls", leases, calls)
		}
		t.Logf("%d renewals in %d RenewBatch calls", leases, calls)
	})
}

// slowRenew holds every Renew until its gate opens and records the
// leases Release is given. It does not renew in batches.
type slowRenew struct {
	fxelection.Backend
	gate     chan struct{}
	entered  chan struct{}
	mu       sync.Mutex
	released []fxelection.Lease
}

func (s *slowRenew) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	s.entered <- struct{}{}
	<-s.gate
	return s.Backend.Renew(ctx, l)
}

func (s *slowRenew) Release(ctx context.Context, l fxelection.Lease) error {
	s.mu.Lock()
	s.released = append(s.released, l)
	s.mu.Unlock()
	return s.Backend.Release(ctx, l)
}

// TestReleaseAwaitsRenewalInFlight: Release during a renewal ends the
// Context at once, lets the renewal finish and releases the lease as
// renewed, so a store that matches the last write on release (PostgreSQL)
// frees it.
func TestReleaseAwaitsRenewalInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &slowRenew{Backend: memory.New(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
		l := newLocker(t, store, "a")
		lk, err := l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		first := lk.Lease()
		<-store.entered // the first renewal is in flight
		released := make(chan error, 1)
		go func() { released <- lk.Release(context.Background()) }()
		synctest.Wait()
		if lk.Context().Err() == nil {
			t.Error("Context not ended by Release")
		}
		select {
		case err := <-released:
			t.Fatalf("Release returned %v during the renewal", err)
		default:
		}
		time.Sleep(100 * time.Millisecond)
		close(store.gate)
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		store.mu.Lock()
		got := store.released
		store.mu.Unlock()
		if len(got) != 1 || !got[0].ExpiresAt.After(first.ExpiresAt) {
			t.Fatalf("released %+v, want the renewed lease (expiring after %v)", got, first.ExpiresAt)
		}
		if _, err := store.Get(context.Background(), "k"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("Get after Release: %v, want ErrNoLease", err)
		}
	})
}

// subscribeCounter counts Subscribe calls.
type subscribeCounter struct {
	*memory.Backend
	mu    sync.Mutex
	calls int
}

func (s *subscribeCounter) Subscribe(election string, wake func()) func() {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Backend.Subscribe(election, wake)
}

// TestUncontendedAcquireSubscribesToNothing: an Acquire that gets the lock
// at its first attempt costs no subscription (which may cost a
// connection); a refused one subscribes, once per slot.
func TestUncontendedAcquireSubscribesToNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &subscribeCounter{Backend: memory.New()}
		l := newLocker(t, store, "a")
		lk, err := l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		sem, err := l.AcquireSemaphore(context.Background(), "s", 2)
		if err != nil {
			t.Fatal(err)
		}
		if store.calls != 0 {
			t.Errorf("%d subscriptions for uncontended acquisitions, want 0", store.calls)
		}
		go func() {
			time.Sleep(time.Second)
			release(t, lk)
		}()
		lk2, err := l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if store.calls != 1 {
			t.Errorf("%d subscriptions for a contended lock, want 1", store.calls)
		}
		sem2, err := l.AcquireSemaphore(context.Background(), "s", 2)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Second)
			release(t, sem)
		}()
		sem3, err := l.AcquireSemaphore(context.Background(), "s", 2)
		if err != nil {
			t.Fatal(err)
		}
		if store.calls != 3 {
			t.Errorf("%d subscriptions after a contended semaphore of 2, want 3", store.calls)
		}
		for _, x := range []*lock.Lock{lk2, sem2, sem3} {
			release(t, x)
		}
	})
}
