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
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// lateReply is a backend whose next armed Acquire calls are applied by the
// store at once and answered only after delay, as through a network that
// delivers replies late. A call whose context ends first returns the
// context's error (the store has granted the lease all the same), unless
// ignoreCtx is set: then it answers after delay whatever its context.
type lateReply struct {
	fxelection.Backend
	delay     time.Duration
	ignoreCtx bool

	mu    sync.Mutex
	armed int // how many of the next Acquire calls are late
}

func (b *lateReply) arm(n int) {
	b.mu.Lock()
	b.armed = n
	b.mu.Unlock()
}

func (b *lateReply) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.armed == 0 {
		return false
	}
	b.armed--
	return true
}

func (b *lateReply) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if !b.take() {
		return b.Backend.Acquire(ctx, req)
	}
	l, err := b.Backend.Acquire(context.WithoutCancel(ctx), req)
	if b.ignoreCtx {
		time.Sleep(b.delay)
		return l, err
	}
	t := time.NewTimer(b.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return l, err
	case <-ctx.Done():
		return fxelection.Lease{}, fmt.Errorf("acquire: reply not received: %w", ctx.Err())
	}
}

// lostReply is a backend whose next armed Acquire calls are applied by the
// store and then fail with a store error, as when a reply is lost.
type lostReply struct {
	fxelection.Backend
	mu    sync.Mutex
	armed int
}

var errReplyLost = errors.New("connection reset by peer")

func (b *lostReply) arm(n int) {
	b.mu.Lock()
	b.armed = n
	b.mu.Unlock()
}

func (b *lostReply) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.Backend.Acquire(ctx, req)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.armed > 0 && err == nil {
		b.armed--
		return fxelection.Lease{}, fmt.Errorf("acquire: %w", errReplyLost)
	}
	return l, err
}

// free reports whether a Locker of its own takes key (or, with n > 0, a
// slot of semaphore key of size n) at once on store, and gives it back.
func free(t *testing.T, store fxelection.Backend, key string, n int) error {
	t.Helper()
	other := newLocker(t, store, "other")
	var (
		lk  *lock.Lock
		err error
	)
	if n > 0 {
		lk, err = other.TryAcquireSemaphore(context.Background(), key, n)
	} else {
		lk, err = other.TryAcquire(context.Background(), key)
	}
	if err == nil {
		release(t, lk)
	}
	return err
}

// TestCutAcquireGivenBack: when the caller's context ends while a winning
// Acquire call is in flight (the store granted the lease, its reply comes
// late), the call returns ctx's error at once, holds nothing (Held is 0)
// and the lease it won is released as soon as its reply arrives: another
// Locker takes the key long before LeaseDuration, for TryAcquire, Acquire
// and a semaphore slot alike.
func TestCutAcquireGivenBack(t *testing.T) {
	const delay = 300 * time.Millisecond
	cases := []struct {
		name string
		n    int // semaphore size; 0 for a lock
		call func(l *lock.Locker, ctx context.Context) (*lock.Lock, error)
	}{
		{"TryAcquire", 0, func(l *lock.Locker, ctx context.Context) (*lock.Lock, error) { return l.TryAcquire(ctx, "k") }},
		{"Acquire", 0, func(l *lock.Locker, ctx context.Context) (*lock.Lock, error) { return l.Acquire(ctx, "k") }},
		{"AcquireSemaphore", 1, func(l *lock.Locker, ctx context.Context) (*lock.Lock, error) {
			return l.AcquireSemaphore(ctx, "k", 1)
		}},
		{"TryAcquireSemaphore", 1, func(l *lock.Locker, ctx context.Context) (*lock.Lock, error) {
			return l.TryAcquireSemaphore(ctx, "k", 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				b := &lateReply{Backend: store, delay: delay}
				b.arm(1)
				l := newLocker(t, b, "a")
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				began := time.Now()
				lk, err := tc.call(l, ctx)
				if !errors.Is(err, context.DeadlineExceeded) || lk != nil {
					t.Fatalf("cut call: %v, %v; want context.DeadlineExceeded", lk, err)
				}
				if took := time.Since(began); took != 100*time.Millisecond {
					t.Errorf("cut call returned after %v, want at its context's end (100ms)", took)
				}
				if n := l.Held(); n != 0 {
					t.Errorf("Held %d after the cut call, want 0", n)
				}
				time.Sleep(delay) // the reply has come
				synctest.Wait()
				if err := free(t, store, "k", tc.n); err != nil {
					t.Errorf("%v after the cut call (LeaseDuration %v): %v; want the key free", time.Since(began), fast.LeaseDuration, err)
				}
				if err := l.Close(context.Background()); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// TestLostReplyGivenBack: a TryAcquire whose winning call fails after the
// store applied it (the reply lost) returns the store error, and the
// lease is given back at once (re-acquired as the same incarnation and
// released), not left to expire; a semaphore's waiting Acquire whose call
// on a slot failed so tries that slot first next, so that it does not keep
// one slot orphaned while taking another.
func TestLostReplyGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		b := &lostReply{Backend: store}
		l := newLocker(t, b, "a")
		b.arm(1)
		if _, err := l.TryAcquire(context.Background(), "k"); !errors.Is(err, errReplyLost) {
			t.Fatalf("TryAcquire with the reply lost: %v, want the store error", err)
		}
		synctest.Wait()
		if err := free(t, store, "k", 0); err != nil {
			t.Errorf("after TryAcquire's lost reply: %v; want the key free", err)
		}
		// A waiting semaphore acquisition whose first call's reply is
		// lost: the slot it may hold is the one it tries next. Over
		// several names, a random next slot would orphan one slot of
		// half of them.
		for i := range 8 {
			name := fmt.Sprintf("sem-%d", i)
			b.arm(1)
			lk, err := l.AcquireSemaphore(context.Background(), name, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := free(t, store, name, 2); err != nil {
				t.Errorf("%s: the other slot is not free while one is held: %v", name, err)
			}
			release(t, lk)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// TestCutAcquireWhenBackendIgnoresContext: a backend that ignores its
// context does not hold Acquire past the caller's context (it returns at
// its end), and the lease its call wins later is released when the call
// returns; Close waits for that give-back, bounded by its context.
func TestCutAcquireWhenBackendIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		b := &lateReply{Backend: store, delay: time.Second, ignoreCtx: true}
		b.arm(1)
		l := newLocker(t, b, "a")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		began := time.Now()
		if lk, err := l.Acquire(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire: %v, want context.DeadlineExceeded", err)
			if lk != nil {
				release(t, lk)
			}
		}
		if took := time.Since(began); took != 100*time.Millisecond {
			t.Errorf("Acquire returned after %v, want at its context's end (100ms)", took)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		if err := l.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close during the give-back: %v, want its context's error", err)
		}
		ccancel()
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("Close once the call returned: %v", err)
		}
		if took := time.Since(began); took != time.Second {
			t.Errorf("the give-back ended %v after the call began, want when the call returned (1s)", took)
		}
		if _, err := store.Get(context.Background(), "k"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("after the give-back: %v, want ErrNoLease", err)
		}
	})
}

// lateRenewal is a backend whose renewals, once armed, are applied by the
// store and then answered only when their context ends (with its error), as
// through a network that delivers the reply after the renew deadline; its
// Release frees the lease only as the caller last saw it (Version), as
// PostgreSQL's matches expires_at.
type lateRenewal struct {
	fxelection.Backend
	mu    sync.Mutex
	armed bool
}

func (b *lateRenewal) arm(on bool) {
	b.mu.Lock()
	b.armed = on
	b.mu.Unlock()
}

func (b *lateRenewal) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	b.mu.Lock()
	armed := b.armed
	b.mu.Unlock()
	if !armed {
		return b.Backend.Renew(ctx, l)
	}
	if _, err := b.Backend.Renew(context.WithoutCancel(ctx), l); err != nil {
		return fxelection.Lease{}, err
	}
	<-ctx.Done()
	return fxelection.Lease{}, fmt.Errorf("renew: reply not received: %w", ctx.Err())
}

func (b *lateRenewal) Release(ctx context.Context, l fxelection.Lease) error {
	cur, err := b.Backend.Get(ctx, l.Election)
	switch {
	case errors.Is(err, backendkit.ErrNoLease):
		return nil
	case err != nil:
		return err
	case cur.Version != l.Version:
		return nil // not the lease as the caller last saw it
	}
	return b.Backend.Release(ctx, l)
}

// TestLateRenewalReleased: a renewal the store applied but whose reply
// came after the renew deadline ends the Lock's Context (ErrLost), and
// Release still frees the key on a store that matches the last write on
// release; a key taken by another since is left alone.
func TestLateRenewalReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		b := &lateRenewal{Backend: store}
		l := newLocker(t, b, "a")
		lk, err := l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		b.arm(true)
		<-lk.Context().Done()
		if cause := context.Cause(lk.Context()); !errors.Is(cause, lock.ErrLost) {
			t.Errorf("cause %v, want ErrLost", cause)
		}
		b.arm(false)
		release(t, lk)
		if _, err := store.Get(context.Background(), "k"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("after Release: %v, want ErrNoLease", err)
		}
		if n := l.Held(); n != 0 {
			t.Errorf("Held %d after Release, want 0", n)
		}

		// Taken by another once the lease expired: Release leaves it.
		lk, err = l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		b.arm(true)
		<-lk.Context().Done()
		b.arm(false)
		time.Sleep(fast.LeaseDuration)
		other := newLocker(t, store, "other")
		theirs, err := other.TryAcquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		release(t, lk)
		if cur, err := store.Get(context.Background(), "k"); err != nil || cur.Term != theirs.Term() {
			t.Errorf("after the old holder's Release: %+v, %v; want the other's lease (term %d)", cur, err, theirs.Term())
		}
		release(t, theirs)
	})
}
