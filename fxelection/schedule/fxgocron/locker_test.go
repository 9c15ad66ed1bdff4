package fxgocron_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
)

// Lock timings for fake time: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod.
var fastLock = lock.Options{Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}

func newLockLocker(t *testing.T, b fxelection.Backend, identity string) *lock.Locker {
	t.Helper()
	opts := fastLock
	opts.Identity = identity
	l, err := lock.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newLocker(t *testing.T, b fxelection.Backend, identity string, opts fxgocron.LockerOptions) *fxgocron.Locker {
	t.Helper()
	l, err := fxgocron.NewLocker(newLockLocker(t, b, identity), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustLock(t *testing.T, l *fxgocron.Locker, job string) gocron.Lock {
	t.Helper()
	lk, err := l.Lock(context.Background(), job)
	if err != nil {
		t.Fatalf("Lock(%q): %v", job, err)
	}
	return lk
}

func unlock(t *testing.T, lk gocron.Lock) {
	t.Helper()
	if err := lk.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func expectLocked(t *testing.T, l *fxgocron.Locker, job, when string) {
	t.Helper()
	lk, err := l.Lock(context.Background(), job)
	if !errors.Is(err, lock.ErrLocked) {
		if lk != nil {
			_ = lk.Unlock(context.Background())
		}
		t.Fatalf("%s: Lock(%q): %v; want an error matching lock.ErrLocked", when, job, err)
	}
}

func closeLocker(t *testing.T, l *fxgocron.Locker) {
	t.Helper()
	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// recv returns the next value from ch, failing t if none comes within a
// minute (of fake time, in a synctest bubble).
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		panic("unreachable")
	}
}

// TestLockSkipsWhenHeldElsewhere: a job's lock held by one instance makes
// Lock on another (and a second run on the same one) fail at once with
// ErrLocked, without waiting; other jobs are independent.
func TestLockSkipsWhenHeldElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newLocker(t, store, "a", fxgocron.LockerOptions{})
		b := newLocker(t, store, "b", fxgocron.LockerOptions{})
		began := time.Now()
		la := mustLock(t, a, "report")
		expectLocked(t, b, "report", "held by a")
		expectLocked(t, a, "report", "a second run on a")
		if d := time.Since(began); d != 0 {
			t.Errorf("refused Locks took %v; want no wait", d)
		}
		lb := mustLock(t, b, "cleanup")
		// The key is Prefix + job name: the lease is in the store under it.
		lease, err := store.Get(context.Background(), fxgocron.DefaultPrefix+"report")
		if err != nil || !strings.HasPrefix(lease.Holder, "a/") {
			t.Fatalf("lease of %q: %+v, %v; want held by a", fxgocron.DefaultPrefix+"report", lease, err)
		}
		unlock(t, la)
		unlock(t, lb)
		closeLocker(t, a)
		closeLocker(t, b)
	})
}

// TestUnlockHoldsUntilMinHold: Unlock of a short run keeps the lock,
// renewed, until MinHold after the acquisition, then releases it; Unlock
// after MinHold, and with a negative MinHold, releases at once.
func TestUnlockHoldsUntilMinHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newLocker(t, store, "a", fxgocron.LockerOptions{})
		b := newLocker(t, store, "b", fxgocron.LockerOptions{})
		if got := a.Options().MinHold; got != fxgocron.DefaultMinHold {
			t.Fatalf("default MinHold %v, want %v", got, fxgocron.DefaultMinHold)
		}

		la := mustLock(t, a, "job")
		time.Sleep(100 * time.Millisecond) // a 100ms run
		unlock(t, la)
		time.Sleep(fxgocron.DefaultMinHold - 100*time.Millisecond - time.Millisecond)
		expectLocked(t, b, "job", "1ms before MinHold")
		time.Sleep(time.Millisecond)
		synctest.Wait() // the deferred release
		lb := mustLock(t, b, "job")

		time.Sleep(fxgocron.DefaultMinHold + time.Millisecond) // a run longer than MinHold
		unlock(t, lb)
		unlock(t, mustLock(t, a, "job")) // released at once, no time passed

		// A MinHold longer than the lease: renewed while held.
		long := newLocker(t, store, "long", fxgocron.LockerOptions{Prefix: "long/", MinHold: 2 * fastLock.LeaseDuration})
		ll := mustLock(t, long, "job")
		unlock(t, ll)
		c := newLocker(t, store, "c", fxgocron.LockerOptions{Prefix: "long/"})
		time.Sleep(2*fastLock.LeaseDuration - time.Millisecond)
		expectLocked(t, c, "job", "after the lease duration, within MinHold")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		unlock(t, mustLock(t, c, "job"))

		// Negative MinHold: released when the run ends.
		now := newLocker(t, store, "now", fxgocron.LockerOptions{MinHold: -1})
		unlock(t, mustLock(t, now, "job"))
		time.Sleep(fxgocron.DefaultMinHold) // b's deferred release of "job" above
		synctest.Wait()
		unlock(t, mustLock(t, now, "job"))
		unlock(t, mustLock(t, b, "job"))
		for _, l := range []*fxgocron.Locker{a, b, long, c, now} {
			closeLocker(t, l)
		}
	})
}

// TestCloseReleasesPending: Close releases at once the locks whose release
// Unlock deferred; afterwards Lock fails with ErrLockerClosed and the
// Unlock of a run still in flight releases at once, even with a cancelled
// context. Nothing is left running (synctest, goleak).
func TestCloseReleasesPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newLocker(t, store, "a", fxgocron.LockerOptions{})
		b := newLocker(t, store, "b", fxgocron.LockerOptions{})
		unlock(t, mustLock(t, a, "j1"))
		unlock(t, mustLock(t, a, "j2"))
		inFlight := mustLock(t, a, "j3")
		expectLocked(t, b, "j1", "pending release")
		began := time.Now()
		closeLocker(t, a)
		if d := time.Since(began); d != 0 {
			t.Errorf("Close took %v, want no wait for MinHold", d)
		}
		unlock(t, mustLock(t, b, "j1"))
		unlock(t, mustLock(t, b, "j2"))
		expectLocked(t, b, "j3", "a run in flight at Close")
		if _, err := a.Lock(context.Background(), "j4"); !errors.Is(err, fxgocron.ErrLockerClosed) {
			t.Fatalf("Lock after Close: %v, want ErrLockerClosed", err)
		}
		cancelled, cancel := context.WithCancel(context.Background())
		cancel() // gocron's job context at shutdown
		if err := inFlight.Unlock(cancelled); err != nil {
			t.Fatalf("Unlock with a cancelled context: %v", err)
		}
		unlock(t, mustLock(t, b, "j3"))
		unlock(t, inFlight) // twice: nil
		closeLocker(t, a)   // twice: nil
		closeLocker(t, b)
	})
}

// TestJobNames: a job name that cannot make a lock key gives an error
// matching ErrJobName (and lock.ErrInvalidKey for the key rule), never a
// panic; bad LockerOptions give a *fxelection.ConfigError naming the field.
func TestJobNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		l := newLocker(t, store, "a", fxgocron.LockerOptions{})
		maxName := strings.Repeat("x", backendkit.MaxNameLen-len(fxgocron.DefaultPrefix))
		for _, c := range []struct {
			name       string
			invalidKey bool
		}{
			{"", false},
			{"bad\x00name", true},
			{"tab\there", true},
			{"\xff", true},
			{maxName + "x", true},
			{"jobs#0", true}, // '#' names the library's own records (a semaphore's slot)
		} {
			lk, err := l.Lock(context.Background(), c.name)
			if lk != nil || !errors.Is(err, fxgocron.ErrJobName) || errors.Is(err, lock.ErrInvalidKey) != c.invalidKey {
				t.Errorf("Lock(%q): %v, %v; want ErrJobName (lock.ErrInvalidKey: %v)", c.name, lk, err, c.invalidKey)
			}
		}
		unlock(t, mustLock(t, l, maxName))
		closeLocker(t, l)

		lk := newLockLocker(t, store, "b")
		for _, c := range []struct {
			opts  fxgocron.LockerOptions
			field string
		}{
			{fxgocron.LockerOptions{Prefix: "a\nb"}, "Prefix"},
			{fxgocron.LockerOptions{Prefix: "gocron#"}, "Prefix"},
			{fxgocron.LockerOptions{Prefix: strings.Repeat("p", backendkit.MaxNameLen)}, "Prefix"},
		} {
			var ce *fxelection.ConfigError
			if _, err := fxgocron.NewLocker(lk, c.opts); !errors.As(err, &ce) || ce.Field != c.field {
				t.Errorf("NewLocker(%+v): %v; want a ConfigError on %s", c.opts, err, c.field)
			}
		}
		if _, err := fxgocron.NewLocker(nil, fxgocron.LockerOptions{}); err == nil {
			t.Error("NewLocker(nil): no error")
		}
	})
}

// newLockerScheduler returns a started scheduler using l, shut down (then
// l closed) at cleanup.
func newLockerScheduler(t *testing.T, l *fxgocron.Locker) gocron.Scheduler {
	t.Helper()
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// TestNewTaskNeedsName: gocron names a job after its function, the same
// for every NewTask job: without gocron.WithName, Lock refuses the run
// with ErrJobName (reported to AfterLockError) and the body never runs;
// with a name, it runs under the lock, with the lock's lease in its
// context.
func TestNewTaskNeedsName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		l := newLocker(t, store, "a", fxgocron.LockerOptions{})
		s := newLockerScheduler(t, l)
		lockErr := make(chan error, 1)
		ran := make(chan uint64, 10)
		body := l.NewTask(func(ctx context.Context) error {
			lease, _ := fxelection.LeaseFromContext(ctx)
			ran <- lease.Term
			return nil
		})
		if _, err := s.NewJob(gocron.DurationJob(time.Hour), body,
			gocron.WithStartAt(gocron.WithStartImmediately()),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) { lockErr <- err }))); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, lockErr, "Lock error"); !errors.Is(err, fxgocron.ErrJobName) {
			t.Fatalf("unnamed NewTask job: Lock error %v, want ErrJobName", err)
		}
		if _, err := s.NewJob(gocron.DurationJob(time.Hour), body,
			gocron.WithStartAt(gocron.WithStartImmediately()), gocron.WithName("named")); err != nil {
			t.Fatal(err)
		}
		if term := recv(t, ran, "run of the named job"); term == 0 {
			t.Fatal("the named job's context carries no lease")
		}
		synctest.Wait()
		if len(ran) != 0 {
			t.Fatal("the unnamed job ran")
		}
	})
}

// TestNewTaskWithoutLock: a NewTask job on a scheduler whose locker is not
// the Locker returns ErrNoLock without running its body.
func TestNewTaskWithoutLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLocker(t, memory.New(), "a", fxgocron.LockerOptions{})
		s, err := gocron.NewScheduler()
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		defer func() { _ = s.Shutdown(); _ = l.Close(context.Background()) }()
		jobErr := make(chan error, 1)
		if _, err := s.NewJob(gocron.DurationJob(time.Hour), l.NewTask(func(context.Context) error {
			t.Error("the body ran without a lock")
			return nil
		}), gocron.WithName("job"), gocron.WithStartAt(gocron.WithStartImmediately()),
			gocron.WithEventListeners(gocron.AfterJobRunsWithError(func(_ uuid.UUID, _ string, err error) { jobErr <- err }))); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, jobErr, "job error"); !errors.Is(err, fxgocron.ErrNoLock) {
			t.Fatalf("job error %v, want ErrNoLock", err)
		}
	})
}

// TestNewTaskContextEndsWhenLockLost: when a run's renewals fail, the
// context NewTask gives the body ends with a cause matching lock.ErrLost at
// the lock's renew deadline, before another instance can take the lock;
// the body's context also ends when the scheduler shuts down.
func TestNewTaskContextEndsWhenLockLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		cut := faultinject.New(store)
		l, err := fxgocron.NewLocker(newLockLocker(t, cut, "a"), fxgocron.LockerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other := newLocker(t, store, "b", fxgocron.LockerOptions{})
		s := newLockerScheduler(t, l)
		type end struct {
			after   time.Duration
			cause   error
			lockErr error // another instance's Lock then
		}
		started, ended := make(chan struct{}), make(chan end, 1)
		if _, err := s.NewJob(gocron.DurationJob(time.Hour), l.NewTask(func(ctx context.Context) error {
			began := time.Now()
			close(started)
			<-ctx.Done()
			e := end{after: time.Since(began), cause: context.Cause(ctx)}
			var lk gocron.Lock
			if lk, e.lockErr = other.Lock(context.Background(), "long"); lk != nil {
				_ = lk.Unlock(context.Background())
			}
			ended <- e
			return nil
		}), gocron.WithName("long"), gocron.WithStartAt(gocron.WithStartImmediately())); err != nil {
			t.Fatal(err)
		}
		recv(t, started, "run")
		cut.Partition(true) // every renewal fails from now on
		e := recv(t, ended, "end of the run's context")
		if !errors.Is(e.cause, lock.ErrLost) {
			t.Fatalf("the run's context ended with %v, want a cause matching lock.ErrLost", e.cause)
		}
		if e.after != fastLock.RenewDeadline {
			t.Errorf("the run's context ended %v after the acquisition, want at the renew deadline (%v)", e.after, fastLock.RenewDeadline)
		}
		if !errors.Is(e.lockErr, lock.ErrLocked) {
			t.Errorf("another instance's Lock when the run's context ended: %v, want lock.ErrLocked", e.lockErr)
		}
		synctest.Wait()
		cut.Partition(false)
		time.Sleep(fastLock.LeaseDuration) // the unreleased lease expires
		unlock(t, mustLock(t, other, "long"))
		closeLocker(t, other)

		// A run in flight at shutdown: its context ends with the job's.
		shut := newLocker(t, store, "c", fxgocron.LockerOptions{})
		s2, err := gocron.NewScheduler(gocron.WithDistributedLocker(shut))
		if err != nil {
			t.Fatal(err)
		}
		started2, cause2 := make(chan struct{}), make(chan error, 1)
		if _, err := s2.NewJob(gocron.DurationJob(time.Hour), shut.NewTask(func(ctx context.Context) error {
			close(started2)
			<-ctx.Done()
			cause2 <- context.Cause(ctx)
			return nil
		}), gocron.WithName("until-shutdown"), gocron.WithStartAt(gocron.WithStartImmediately())); err != nil {
			t.Fatal(err)
		}
		s2.Start()
		recv(t, started2, "run")
		if err := s2.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if c := recv(t, cause2, "end of the run's context"); !errors.Is(c, context.Canceled) || errors.Is(c, lock.ErrLost) {
			t.Fatalf("at shutdown the run's context ended with %v, want context.Canceled", c)
		}
		closeLocker(t, shut)
	})
}
