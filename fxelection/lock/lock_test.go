package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Short timings for fake time: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod.
var fast = lock.Options{Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}

func newLocker(t *testing.T, b fxelection.Backend, identity string) *lock.Locker {
	t.Helper()
	opts := fast
	opts.Identity = identity
	l, err := lock.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func release(t *testing.T, lk *lock.Lock) {
	t.Helper()
	if err := lk.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// fencedCounter is a store that refuses writes carrying a term lower than
// the highest it has seen, as a fencing guard (package fence) does.
type fencedCounter struct {
	mu       sync.Mutex
	highest  uint64
	count    int
	rejected int
	terms    []uint64 // the term of every write accepted, in order
}

func (c *fencedCounter) read(term uint64) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if term < c.highest {
		c.rejected++
		return 0, false
	}
	c.highest = term
	return c.count, true
}

func (c *fencedCounter) write(term uint64, v int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if term < c.highest {
		c.rejected++
		return false
	}
	c.highest = term
	c.count = v
	c.terms = append(c.terms, term)
	return true
}

// TestMutualExclusion: 8 goroutines (two per Locker, so that goroutines
// sharing a Locker exclude each other too) take one key 50 times each and
// do a fenced read-modify-write of a counter under it: never two holders
// at once, no write refused, the final count is the number of
// acquisitions, and the terms of the accepted writes strictly increase.
func TestMutualExclusion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const goroutines, rounds = 8, 50
		store := memory.New()
		var lockers []*lock.Locker
		for i := range goroutines / 2 {
			lockers = append(lockers, newLocker(t, store, "locker-"+string(rune('a'+i))))
		}
		var (
			counter fencedCounter
			inside  atomic.Int32
			overlap atomic.Int32
			wg      sync.WaitGroup
		)
		for g := range goroutines {
			wg.Go(func() {
				l := lockers[g/2]
				for range rounds {
					lk, err := l.Acquire(context.Background(), "counter")
					if err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) != 1 {
						overlap.Add(1)
					}
					v, ok := counter.read(lk.Term())
					time.Sleep(10 * time.Millisecond) // the critical section takes a while
					if ok {
						counter.write(lk.Term(), v+1)
					}
					inside.Add(-1)
					if lk.Context().Err() != nil {
						t.Errorf("term %d: Context ended while held: %v", lk.Term(), context.Cause(lk.Context()))
					}
					if err := lk.Release(context.Background()); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if n := overlap.Load(); n != 0 {
			t.Errorf("%d acquisitions overlapped another holder", n)
		}
		if counter.count != goroutines*rounds || counter.rejected != 0 {
			t.Errorf("count %d with %d writes refused, want %d and 0", counter.count, counter.rejected, goroutines*rounds)
		}
		for i := 1; i < len(counter.terms); i++ {
			if counter.terms[i] <= counter.terms[i-1] {
				t.Fatalf("write %d has term %d after %d: terms must strictly increase", i, counter.terms[i], counter.terms[i-1])
			}
		}
	})
}

// TestTryAcquire: TryAcquire on a held key fails with ErrLocked wrapping
// the holder (also from the holder's own Locker: locks are not
// reentrant); after Release it succeeds with a higher term.
func TestTryAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := newLocker(t, store, "a"), newLocker(t, store, "b")
		held, err := a.TryAcquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []*lock.Locker{b, a} {
			_, err = l.TryAcquire(context.Background(), "k")
			var he *backendkit.HeldError
			if !errors.Is(err, lock.ErrLocked) || !errors.As(err, &he) {
				t.Fatalf("TryAcquire of a held key: %v, want ErrLocked wrapping a *HeldError", err)
			}
			if he.Holder.Term != held.Term() || !strings.HasPrefix(he.Holder.Holder, "a/") {
				t.Errorf("holder in the error: %q term %d, want a/… term %d", he.Holder.Holder, he.Holder.Term, held.Term())
			}
		}
		release(t, held)
		next, err := b.TryAcquire(context.Background(), "k")
		if err != nil {
			t.Fatalf("TryAcquire after Release: %v", err)
		}
		if next.Term() <= held.Term() {
			t.Errorf("term %d after %d, want higher", next.Term(), held.Term())
		}
		again, err := b.TryAcquire(context.Background(), "other")
		if err != nil {
			t.Fatal(err)
		}
		release(t, next)
		release(t, again)
	})
}

// subscriptions counts a Notifier's live subscriptions.
type subscriptions struct {
	*memory.Backend
	live atomic.Int32
}

func (s *subscriptions) Subscribe(election string, wake func()) func() {
	s.live.Add(1)
	cancel := s.Backend.Subscribe(election, wake)
	var once sync.Once
	return func() { once.Do(func() { cancel(); s.live.Add(-1) }) }
}

// TestAcquireTimesOut: Acquire on a key held throughout returns the
// context's error (matching ErrLocked too, the last attempt's outcome)
// when its context times out, after polling rather than spinning, and
// leaves nothing behind: no subscription, no goroutine (synctest and
// goleak), and the holder unaffected.
func TestAcquireTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &subscriptions{Backend: memory.New()}
		counted := faultinject.New(store)
		a, b := newLocker(t, store, "a"), newLocker(t, counted, "b")
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		began := time.Now()
		type result struct {
			lk  *lock.Lock
			err error
		}
		res := make(chan result, 1)
		go func() {
			lk, err := b.Acquire(ctx, "k")
			res <- result{lk, err}
		}()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := store.live.Load(); n != 1 {
			t.Errorf("%d subscriptions live while one Acquire waits, want 1", n)
		}
		r := <-res
		if r.lk != nil || !errors.Is(r.err, context.DeadlineExceeded) || !errors.Is(r.err, lock.ErrLocked) {
			t.Fatalf("Acquire of a held key with a 5s timeout: %v, %v; want DeadlineExceeded and ErrLocked", r.lk, r.err)
		}
		if took := time.Since(began); took != 5*time.Second {
			t.Errorf("returned after %v, want at the timeout (5s)", took)
		}
		// One attempt per RetryPeriod to 1.2 × RetryPeriod: 5s/500ms = 10 at most, plus the first.
		if n := counted.Calls(backendkit.OpAcquire); n < 5 || n > 11 {
			t.Errorf("%d attempts in 5s with RetryPeriod 500ms, want 5 to 11", n)
		}
		if n := store.live.Load(); n != 0 {
			t.Errorf("%d subscriptions live after Acquire returned, want 0", n)
		}
		if held.Context().Err() != nil {
			t.Errorf("holder's Context ended: %v", context.Cause(held.Context()))
		}
		release(t, held)
	})
}

// TestRenewalKeepsLock: a held lock is renewed in the background: after
// ten lease durations its Context has not ended, its term is unchanged and
// others still find it held.
func TestRenewalKeepsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := newLocker(t, store, "a"), newLocker(t, store, "b")
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		first := held.Lease()
		time.Sleep(10 * fast.LeaseDuration)
		if err := held.Context().Err(); err != nil {
			t.Fatalf("Context ended while renewals succeed: %v", context.Cause(held.Context()))
		}
		if l := held.Lease(); l.Term != first.Term || !l.ExpiresAt.After(first.ExpiresAt) {
			t.Errorf("lease after renewals: term %d expires %v; want term %d, expiry after %v", l.Term, l.ExpiresAt, first.Term, first.ExpiresAt)
		}
		if _, err := b.TryAcquire(context.Background(), "k"); !errors.Is(err, lock.ErrLocked) {
			t.Errorf("TryAcquire of a renewed lock: %v, want ErrLocked", err)
		}
		release(t, held)
	})
}

// TestRenewalFailureEndsContextFirst: a holder cut off from the store
// (faultinject's partition) loses its Context with ErrLost before its
// lease expires in the store, and a waiter on the healthy store gets the
// lock only once the lease has expired, with a higher term.
func TestRenewalFailureEndsContextFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		cut := faultinject.New(store)
		a, b := newLocker(t, cut, "a"), newLocker(t, store, "b")
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1200 * time.Millisecond) // a couple of renewals
		cut.Partition(true)
		expires := held.Lease().ExpiresAt // the store's expiry after the last renewal that got through

		type won struct {
			lk *lock.Lock
			at time.Time
		}
		next := make(chan won, 1)
		go func() {
			lk, err := b.Acquire(context.Background(), "k")
			if err != nil {
				t.Error(err)
			}
			next <- won{lk, time.Now()}
		}()

		<-held.Context().Done()
		ended := time.Now()
		if cause := context.Cause(held.Context()); !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, faultinject.ErrInjected) {
			t.Errorf("cause %v, want ErrLost with the store failure", cause)
		}
		if !ended.Before(expires) {
			t.Errorf("Context ended at %v, not before the lease expired at %v", ended, expires)
		}
		w := <-next
		if w.at.Before(expires) {
			t.Errorf("waiter took the lock at %v, before the lease expired at %v", w.at, expires)
		}
		if w.lk.Term() <= held.Term() {
			t.Errorf("waiter's term %d, want above the lost holder's %d", w.lk.Term(), held.Term())
		}
		cut.Partition(false)
		release(t, held) // no longer its lease: nothing to release, no error
		if _, err := b.TryAcquire(context.Background(), "k"); !errors.Is(err, lock.ErrLocked) {
			t.Errorf("the lost holder's Release freed the new holder's lock: %v", err)
		}
		release(t, w.lk)
	})
}

// TestLeaseLostEndsContext: a renewal that finds the lease gone (taken
// over behind the holder's back) ends the Context at once with ErrLost.
func TestLeaseLostEndsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newLocker(t, store, "a")
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		// Another program frees the record (as an operator might).
		if err := store.Release(context.Background(), held.Lease()); err != nil {
			t.Fatal(err)
		}
		<-held.Context().Done()
		if took := time.Since(held.Lease().AcquiredAt); took > fast.RetryPeriod {
			t.Errorf("Context ended %v after the loss, want at the next renewal (RetryPeriod %v)", took, fast.RetryPeriod)
		}
		if cause := context.Cause(held.Context()); !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, backendkit.ErrLeaseLost) {
			t.Errorf("cause %v, want ErrLost matching ErrLeaseLost", cause)
		}
		release(t, held)
	})
}

// TestReleaseWakesWaiter: on a backend with push wake-up a Release hands
// the lock to a waiter at once (no time passes in the bubble), not at its
// next poll.
func TestReleaseWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		slow := lock.Options{Timing: fxelection.Timing{LeaseDuration: time.Minute, RenewDeadline: 40 * time.Second, RetryPeriod: 10 * time.Second}}
		a, err := lock.New(store, slow)
		if err != nil {
			t.Fatal(err)
		}
		b, err := lock.New(store, slow)
		if err != nil {
			t.Fatal(err)
		}
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *lock.Lock, 1)
		go func() {
			lk, err := b.Acquire(context.Background(), "k")
			if err != nil {
				t.Error(err)
			}
			got <- lk
		}()
		time.Sleep(3 * time.Second) // the waiter tried once and waits
		synctest.Wait()
		released := time.Now()
		release(t, held)
		lk := <-got
		if took := time.Since(released); took != 0 {
			t.Errorf("waiter held the lock %v after the release, want at once (RetryPeriod %v)", took, slow.RetryPeriod)
		}
		release(t, lk)
	})
}

// noPush hides the memory backend's Notifier.
type noPush struct{ fxelection.Backend }

// TestPollingWithoutPush: without push wake-up a waiter takes a released
// lock at its next poll, within 1.2 × RetryPeriod.
func TestPollingWithoutPush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := noPush{memory.New()}
		a, b := newLocker(t, store, "a"), newLocker(t, store, "b")
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *lock.Lock, 1)
		go func() {
			lk, err := b.Acquire(context.Background(), "k")
			if err != nil {
				t.Error(err)
			}
			got <- lk
		}()
		time.Sleep(time.Second)
		released := time.Now()
		release(t, held)
		lk := <-got
		if took := time.Since(released); took > fast.RetryPeriod*6/5 {
			t.Errorf("waiter held the lock %v after the release, want within 1.2 × RetryPeriod", took)
		}
		release(t, lk)
	})
}

// TestTermsPerAcquire: two Acquires of one key by one Locker get strictly
// increasing terms (each is an incarnation of its own), and the Context
// carries the lease for fencing guards.
func TestTermsPerAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLocker(t, memory.New(), "a")
		var last uint64
		for range 3 {
			lk, err := l.Acquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if lk.Term() <= last {
				t.Errorf("term %d after %d, want higher", lk.Term(), last)
			}
			last = lk.Term()
			tok, err := fence.FromContext(lk.Context())
			if err != nil || tok != (fence.Token{Election: "k", Term: lk.Term()}) || lk.Key() != "k" {
				t.Errorf("token from Context: %+v, %v; want k/%d", tok, err, lk.Term())
			}
			release(t, lk)
		}
	})
}

// TestReleaseIdempotent: Release ends the Context with ErrReleased; a
// second Release returns nil and changes nothing; a failed Release can be
// retried.
func TestReleaseIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		f := faultinject.New(store)
		l := newLocker(t, f, "a")
		lk, err := l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		f.Fail(backendkit.OpRelease, faultinject.ErrInjected)
		if err := lk.Release(context.Background()); !errors.Is(err, faultinject.ErrInjected) {
			t.Fatalf("Release on a failing store: %v, want the store failure", err)
		}
		if cause := context.Cause(lk.Context()); !errors.Is(cause, lock.ErrReleased) {
			t.Errorf("cause after Release: %v, want ErrReleased", cause)
		}
		f.Fail(backendkit.OpRelease, nil)
		release(t, lk)
		next, err := l.TryAcquire(context.Background(), "k")
		if err != nil {
			t.Fatalf("TryAcquire after the retried Release: %v", err)
		}
		release(t, lk) // again: nil, and next keeps its lock
		if _, err := store.Get(context.Background(), "k"); err != nil {
			t.Errorf("a second Release of the old lock freed the new one: %v", err)
		}
		release(t, next)
	})
}

// TestBadOptions: every bad option gives a *fxelection.ConfigError naming
// its field; the zero Options mean the documented defaults.
func TestBadOptions(t *testing.T) {
	store := memory.New()
	for _, tc := range []struct {
		field string
		opts  lock.Options
	}{
		{"Identity", lock.Options{Identity: strings.Repeat("x", lock.MaxIdentityLen+1)}},
		{"Identity", lock.Options{Identity: "a\nb"}},
		{"LeaseDuration", lock.Options{Timing: fxelection.Timing{LeaseDuration: -time.Second}}},
		{"RenewDeadline", lock.Options{Timing: fxelection.Timing{LeaseDuration: 10 * time.Second, RenewDeadline: 10 * time.Second}}},
		{"RenewDeadline", lock.Options{Timing: fxelection.Timing{RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second}}},
		{"RetryPeriod", lock.Options{Timing: fxelection.Timing{RetryPeriod: time.Millisecond}}},
	} {
		_, err := lock.New(store, tc.opts)
		var ce *fxelection.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New(%+v): %v, want a ConfigError naming %s", tc.opts, err, tc.field)
		}
		if err := tc.opts.Validate(); err == nil {
			t.Errorf("Options(%+v).Validate() = nil", tc.opts)
		}
	}
	if _, err := lock.New(nil, lock.Options{}); err == nil || !strings.Contains(err.Error(), "backend") {
		t.Errorf("New(nil): %v, want an error naming the backend", err)
	}
	l, err := lock.New(store, lock.Options{Identity: strings.Repeat("x", lock.MaxIdentityLen)})
	if err != nil {
		t.Fatalf("New with the longest identity: %v", err)
	}
	if got := l.Options(); got.LeaseDuration != 15*time.Second || got.RenewDeadline != 10*time.Second || got.RetryPeriod != 2*time.Second {
		t.Errorf("defaults %+v, want 15s/10s/2s", got)
	}
	synctest.Test(t, func(t *testing.T) {
		l, err := lock.New(memory.New(), lock.Options{Identity: strings.Repeat("x", lock.MaxIdentityLen)})
		if err != nil {
			t.Fatal(err)
		}
		lk, err := l.TryAcquire(context.Background(), "k") // the holder with its suffix fits
		if err != nil {
			t.Fatalf("TryAcquire with the longest identity: %v", err)
		}
		release(t, lk)
	})
	if got, err := lock.New(store, lock.Options{}); err != nil || got.Options().Identity == "" {
		t.Errorf("zero Options: identity %q, %v; want fxelection.DefaultIdentity()", got.Options().Identity, err)
	}
}

// TestBadKeys: keys follow the rule for election names; Acquire and
// TryAcquire refuse others with ErrInvalidKey, naming the key, before any
// store call.
func TestBadKeys(t *testing.T) {
	f := faultinject.New(memory.New())
	l, err := lock.New(f, fast)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", strings.Repeat("k", backendkit.MaxNameLen+1), "a\x00b", "\xff"} {
		if _, err := l.TryAcquire(context.Background(), key); !errors.Is(err, lock.ErrInvalidKey) || !strings.Contains(err.Error(), "key") {
			t.Errorf("TryAcquire(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := l.Acquire(context.Background(), key); !errors.Is(err, lock.ErrInvalidKey) {
			t.Errorf("Acquire(%q): %v, want ErrInvalidKey", key, err)
		}
	}
	if n := f.Calls(backendkit.OpAcquire); n != 0 {
		t.Errorf("%d store calls for invalid keys, want 0", n)
	}
}

// TestWedgedRenewal: a renewal stuck in a backend call that ignores its
// context (faultinject's wedge) cannot stretch the lock: the Context
// still ends at the renew deadline, before the lease expires; Release is
// bounded by its context meanwhile, and succeeds when tried again once
// the call returned.
func TestWedgedRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		f := faultinject.New(store)
		l := newLocker(t, f, "a")
		held, err := l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		acquired := time.Now()
		expires := held.Lease().ExpiresAt
		f.Wedge(backendkit.OpRenew, true) // the first renewal, at RetryPeriod, hangs
		<-held.Context().Done()
		if took := time.Since(acquired); took != fast.RenewDeadline || !time.Now().Before(expires) {
			t.Errorf("Context ended %v after the acquisition, want at RenewDeadline (%v), before the lease expires", took, fast.RenewDeadline)
		}
		if cause := context.Cause(held.Context()); !errors.Is(cause, lock.ErrLost) {
			t.Errorf("cause %v, want ErrLost", cause)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		began := time.Now()
		err = held.Release(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) != time.Second {
			t.Errorf("Release with a wedged renewal: %v after %v, want DeadlineExceeded after 1s", err, time.Since(began))
		}
		f.Wedge(backendkit.OpRenew, false)
		release(t, held)
		if _, err := store.Get(context.Background(), "k"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("after the retried Release: %v, want ErrNoLease", err)
		}
	})
}

// lateAcquire is a backend whose first Acquire takes delay, ignoring its
// context, and then succeeds.
type lateAcquire struct {
	fxelection.Backend
	delay time.Duration
	calls atomic.Int32
}

func (b *lateAcquire) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if b.calls.Add(1) == 1 {
		time.Sleep(b.delay)
		return b.Backend.Acquire(context.WithoutCancel(ctx), req)
	}
	return b.Backend.Acquire(ctx, req)
}

// TestWonLateGivenBack: a lease granted after the attempt's renew
// deadline (by a backend that ignored its context) is given back, not
// believed; Acquire tries again and returns a lock with a live Context
// and a higher term.
func TestWonLateGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		b := &lateAcquire{Backend: store, delay: fast.RenewDeadline + time.Second}
		l := newLocker(t, b, "a")
		lk, err := l.TryAcquire(context.Background(), "k")
		if err == nil || lk != nil {
			t.Fatalf("TryAcquire won after the renew deadline: %v, %v; want an error", lk, err)
		}
		if _, err := store.Get(context.Background(), "k"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("the late lease was not given back: %v", err)
		}
		b.calls.Store(0)
		lk, err = l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if lk.Context().Err() != nil || lk.Term() < 2 || b.calls.Load() != 2 {
			t.Errorf("lock after a late win: Context %v, term %d, %d attempts; want live, term ≥ 2, 2 attempts", lk.Context().Err(), lk.Term(), b.calls.Load())
		}
		release(t, lk)
	})
}

type ctxKey struct{}

// TestAcquireContext: an Acquire whose context is already done returns its
// error without waiting; the Lock's Context carries the values of
// Acquire's context but does not end with it.
func TestAcquireContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLocker(t, memory.New(), "a")
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := l.Acquire(done, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire with a done context: %v, want context.Canceled", err)
		}
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		lk, err := l.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if lk.Context().Value(ctxKey{}) != "v" || lk.Context().Err() != nil {
			t.Errorf("Lock's Context: value %v, err %v; want Acquire's value and not done", lk.Context().Value(ctxKey{}), lk.Context().Err())
		}
		release(t, lk)
	})
}
