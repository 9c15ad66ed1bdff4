package electiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// The smoke part: real electors and package lock's Lockers on the backend,
// one short run each. What electors and locks decide on their own
// (priorities, preemption, grace, step-down, semaphores, waiting) is
// tested once, on the in-memory backend under fake time, by the
// repository's own feature cases.

// lockRetry is the smoke Lockers' RetryPeriod: how often a waiter polls
// without push wake-up, and a holder renews.
const lockRetry = 50 * time.Millisecond

// handOverOnStop: three electors, each on a client of its own; the
// followers learn the leader; the leader stops gracefully, releasing, and
// another leads within one retry period (at once with push wake-up) with a
// higher term; no two ever believed they led at once, and terms rose.
func (s *suite) handOverOnStop(t *testing.T) {
	rec := &electiontesting.Recorder{}
	tm := s.o.Timing
	name := electiontesting.Election(t)
	cs := make([]*fxelection.Elector, 3)
	for i := range cs {
		e, err := fxelection.New(fxelection.Config{
			Name: name, Identity: fmt.Sprintf("smoke-%d", i), Metadata: map[string]string{"i": fmt.Sprint(i)},
			Timing: fxelection.Timing{
				LeaseDuration: tm.LeaseDuration,
				RenewDeadline: tm.RenewDeadline,
				RetryPeriod:   tm.RetryPeriod,
				MaxBackoff:    4 * tm.RetryPeriod,
			},
		}, s.newBackend(t))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		e.AddObserver(rec)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		cs[i] = e
	}
	leader, _ := waitLeader(t, cs, nil, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	first, _ := leader.Lease()

	// Let the followers settle into their retry wait and learn the leader.
	time.Sleep(tm.RetryPeriod * 3 / 2)
	for _, c := range cs {
		if l, ok := c.Leader(); c != leader && (!ok || l.Holder != leader.Status().Identity || l.Term != first.Term) {
			t.Fatalf("follower %s sees leader %+v (known %v), want %s term %d", c.Status().Identity, l, ok, leader.Status().Identity, first.Term)
		}
	}
	_, push := s.newBackend(t).(backendkit.Notifier)
	stopped := time.Now()
	if err := leader.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	next, at := waitLeader(t, cs, leader, backoff.JitterMax(tm.RetryPeriod)+5*time.Second)
	second, _ := next.Lease()
	if second.Term <= first.Term {
		t.Fatalf("term after hand-over %d, want > %d", second.Term, first.Term)
	}
	t.Logf("hand-over took %v (push wake-up: %v, retry period %v)", at.Sub(stopped), push, tm.RetryPeriod)
	rec.Check(t)
}

// waitLeader waits up to limit for exactly one elector other than except
// to lead, and returns it with the time it was seen.
func waitLeader(t *testing.T, es []*fxelection.Elector, except *fxelection.Elector, limit time.Duration) (*fxelection.Elector, time.Time) {
	t.Helper()
	return electiontesting.WaitOneLeader(t, es, except, (*fxelection.Elector).IsLeader, limit)
}

// newLocker returns a Locker with identity id on a client of its own,
// closed at the end of the test.
func (s *suite) newLocker(t *testing.T, b fxelection.Backend, id string) *lock.Locker {
	t.Helper()
	tm := s.o.Timing
	l, err := lock.New(b, lock.Options{Identity: id, Timing: fxelection.Timing{LeaseDuration: tm.LeaseDuration, RenewDeadline: tm.RenewDeadline, RetryPeriod: lockRetry}})
	if err != nil {
		t.Fatalf("lock.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), tm.LeaseDuration+10*time.Second)
		defer cancel()
		if err := l.Close(ctx); err != nil {
			t.Errorf("Close of locker %s: %v", id, err)
		}
	})
	return l
}

// release releases lk, failing the test if that fails.
func release(t *testing.T, lk *lock.Lock) {
	t.Helper()
	if err := lk.Release(electiontesting.Context(t)); err != nil {
		t.Fatalf("Release of %s: %v", lk.Key(), err)
	}
}

// checkToken checks that lk's Context carries its fencing token.
func checkToken(t *testing.T, lk *lock.Lock, key string) {
	t.Helper()
	tok, err := fence.FromContext(lk.Context())
	if err != nil || tok != (fence.Token{Election: key, Term: lk.Term()}) {
		t.Fatalf("fencing token of the Lock's Context: %+v, %v; want %s/%d", tok, err, key, lk.Term())
	}
}

// lockSmoke: two Lockers, each on a client of its own. a takes a key; its
// Lock's Context carries the fencing token (key, term). b's TryAcquire is
// ErrLocked naming a's holder and term; b's Acquire waits while a holds
// the lock, and takes it once a releases (a's Context then ends with
// ErrReleased), with a higher term and its own token.
func (s *suite) lockSmoke(t *testing.T) {
	a := s.newLocker(t, s.newBackend(t), "smoke-a")
	b := s.newLocker(t, s.newBackend(t), "smoke-b")
	ctx, key := electiontesting.Context(t), electiontesting.Election(t)
	la, err := a.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire of a free key: %v", err)
	}
	holder := la.Lease().Holder
	if !strings.HasPrefix(holder, "smoke-a/") || la.Term() == 0 || la.Key() != key {
		t.Fatalf("lock: holder %q, term %d, key %q; want smoke-a/…, a term, %q", holder, la.Term(), la.Key(), key)
	}
	checkToken(t, la, key)
	_, err = b.TryAcquire(ctx, key)
	var he *backendkit.HeldError
	if !errors.Is(err, lock.ErrLocked) || !errors.As(err, &he) || he.Holder.Holder != holder || he.Holder.Term != la.Term() {
		t.Fatalf("TryAcquire of a held key: %v, want ErrLocked with a *backendkit.HeldError naming %s term %d", err, holder, la.Term())
	}
	type result struct {
		lk  *lock.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		lk, err := b.Acquire(ctx, key)
		got <- result{lk, err}
	}()
	time.Sleep(4 * lockRetry) // b waits, polling or woken
	select {
	case r := <-got:
		t.Fatalf("Acquire of a held key returned %v, %v", r.lk, r.err)
	default:
	}
	release(t, la)
	if cause := context.Cause(la.Context()); !errors.Is(cause, lock.ErrReleased) {
		t.Fatalf("released Lock's Context: cause %v, want ErrReleased", cause)
	}
	r := <-got // bounded by ctx
	if r.err != nil {
		t.Fatalf("Acquire of a released key: %v", r.err)
	}
	if r.lk.Term() <= la.Term() {
		t.Fatalf("term %d after the release of term %d, want higher", r.lk.Term(), la.Term())
	}
	checkToken(t, r.lk, key)
	release(t, r.lk)
}

// lockReleaseDuringRenewal: a lock released at random points of its
// renewal cycle is free in the store once Release returns, every time,
// also when Release lands during a renewal (which Release lets finish: a
// renewal cut short could still be applied by the store, and a backend
// that matches the last write on release would then free nothing and
// leave the lock held for a whole lease).
func (s *suite) lockReleaseDuringRenewal(t *testing.T) {
	b := s.newBackend(t)
	l := s.newLocker(t, b, "release-during-renewal")
	key := electiontesting.Election(t)
	const rounds = 60
	for i := range rounds {
		lk, err := l.TryAcquire(electiontesting.Context(t), key)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		time.Sleep(rand.N(2 * lockRetry))
		release(t, lk)
		got, err := b.Get(electiontesting.Context(t), key)
		switch {
		case errors.Is(err, backendkit.ErrNoLease):
		case err != nil:
			t.Fatalf("round %d: Get after Release: %v", i, err)
		case got.Holder == lk.Lease().Holder && got.Term == lk.Term():
			t.Fatalf("round %d: the store still shows the released lock (term %d, expiring %v)", i, got.Term, got.ExpiresAt)
		}
	}
}
