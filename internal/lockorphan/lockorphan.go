// Package lockorphan holds the scenarios of package lock's orphan tests on
// real stores (modules/redis, modules/postgres): a client behind a proxy
// that delivers the store's replies late loses its caller's context, or its
// renewal's deadline, after the store applied the call, and the key must
// be free for another client long before the lease could expire.
package lockorphan

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/lock"
)

// LeaseDuration is the locks' lease: long, so that a key freed before
// half of it has passed was released, not expired.
const LeaseDuration = 30 * time.Second

// Store is one store under test.
type Store struct {
	// Proxy sits between Through and the store.
	Proxy *electiontest.Proxy
	// Through is a client whose connections go through Proxy.
	Through fxelection.Backend
	// Direct is another client, connected to the store directly.
	Direct fxelection.Backend
}

// timing is the Lockers' timing: LeaseDuration, and a renew deadline and
// retry period short enough for the renewal scenario. RetryPeriod is below
// a second so that the first renewal finds the acquisition's connection
// fresh: a pool that checks connections idle for longer (pgxpool pings
// those idle over a second) would otherwise wait for that check's late
// reply and never send the renewal.
var timing = lock.Options{Timing: fxelection.Timing{LeaseDuration: LeaseDuration, RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}}

func newLocker(t *testing.T, b fxelection.Backend, identity string) *lock.Locker {
	t.Helper()
	opts := timing
	opts.Identity = identity
	l, err := lock.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", identity, err)
		}
	})
	return l
}

// takeable reports whether a Locker on b takes key (a slot of semaphore
// key of size n, when n > 0) at once, and gives it back.
func takeable(t *testing.T, l *lock.Locker, key string, n int) error {
	t.Helper()
	var (
		lk  *lock.Lock
		err error
	)
	if n > 0 {
		lk, err = l.TryAcquireSemaphore(context.Background(), key, n)
	} else {
		lk, err = l.TryAcquire(context.Background(), key)
	}
	if err != nil {
		return err
	}
	return lk.Release(context.Background())
}

// CutAcquire: for TryAcquire, Acquire and both semaphore forms, the
// caller's context (100ms) ends while the winning call's reply is held
// by the proxy (300ms): the call returns ctx's error and the Locker holds
// nothing, and another client takes the key before half of LeaseDuration
// has passed since the grant, which only a release allows.
func CutAcquire(t *testing.T, s Store, prefix string) {
	const (
		cut   = 100 * time.Millisecond
		delay = 300 * time.Millisecond
	)
	cases := []struct {
		name string
		n    int // semaphore size; 0 for a lock
		call func(ctx context.Context, l *lock.Locker, key string) (*lock.Lock, error)
	}{
		{"TryAcquire", 0, func(ctx context.Context, l *lock.Locker, key string) (*lock.Lock, error) {
			return l.TryAcquire(ctx, key)
		}},
		{"Acquire", 0, func(ctx context.Context, l *lock.Locker, key string) (*lock.Lock, error) {
			return l.Acquire(ctx, key)
		}},
		{"AcquireSemaphore", 1, func(ctx context.Context, l *lock.Locker, key string) (*lock.Lock, error) {
			return l.AcquireSemaphore(ctx, key, 1)
		}},
		{"TryAcquireSemaphore", 1, func(ctx context.Context, l *lock.Locker, key string) (*lock.Lock, error) {
			return l.TryAcquireSemaphore(ctx, key, 1)
		}},
	}
	holder := newLocker(t, s.Through, "cut")
	other := newLocker(t, s.Direct, "other")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := prefix + "-" + tc.name
			// A connection of the client is open before the replies slow.
			if err := takeable(t, holder, key, tc.n); err != nil {
				t.Fatalf("warm-up: %v", err)
			}
			s.Proxy.SetReplyLatency(delay)
			ctx, cancel := context.WithTimeout(context.Background(), cut)
			began := time.Now()
			lk, err := tc.call(ctx, holder, key)
			cancel()
			s.Proxy.SetReplyLatency(0) // the held reply keeps its delay
			switch {
			case err == nil:
				_ = lk.Release(context.Background())
				t.Fatalf("cut call won: want context.DeadlineExceeded")
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("cut call: %v, want context.DeadlineExceeded", err)
			}
			if n := holder.Held(); n != 0 {
				t.Errorf("Held %d after the cut call, want 0", n)
			}
			// The grant came after began: its lease cannot expire before
			// began + LeaseDuration. Free well before that, it was released.
			limit := began.Add(LeaseDuration / 2)
			for {
				err := takeable(t, other, key, tc.n)
				if err == nil {
					t.Logf("free %v after the cut call began", time.Since(began).Round(time.Millisecond))
					break
				}
				if !errors.Is(err, lock.ErrLocked) {
					t.Fatalf("the other client: %v", err)
				}
				if time.Now().After(limit) {
					t.Fatalf("still held %v after the cut call began (LeaseDuration %v): %v; the lease it won was not given back", time.Since(began).Round(time.Millisecond), LeaseDuration, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// LateRenewal: a renewal that the store applies but whose reply the proxy
// holds past the renew deadline ends the Lock's Context (ErrLost); Release
// (replies on time again) then frees the key, so that another client takes
// it at once rather than after the renewed lease's LeaseDuration.
func LateRenewal(t *testing.T, s Store, key string) {
	holder := newLocker(t, s.Through, "late")
	other := newLocker(t, s.Direct, "other")
	lk, err := holder.Acquire(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	// The first renewal starts RetryPeriod after the acquisition; its
	// reply comes a whole renew deadline later, after its deadline.
	s.Proxy.SetReplyLatency(timing.RenewDeadline)
	<-lk.Context().Done()
	s.Proxy.SetReplyLatency(0)
	// The premise: the store applied the renewal (on a store that reports
	// expiries, the record's has moved past the Lock's).
	cur, err := s.Direct.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !cur.ExpiresAt.IsZero() && !cur.ExpiresAt.After(lk.Lease().ExpiresAt) {
		t.Fatalf("the late renewal was not applied (record expires %v, the Lock's lease %v): the scenario did not happen", cur.ExpiresAt, lk.Lease().ExpiresAt)
	}
	if cause := context.Cause(lk.Context()); !errors.Is(cause, lock.ErrLost) {
		t.Errorf("cause %v, want ErrLost", cause)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := lk.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := takeable(t, other, key, 0); err != nil {
		t.Errorf("after Release: %v; want the key free (LeaseDuration %v)", err, LeaseDuration)
	}
}
