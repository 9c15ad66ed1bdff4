package lock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// The fx tests run on real time (fx apps outside synctest bubbles) with
// timing far from the rules' limits, and assert outcomes, never speed.

// acquired is a lock taken by a test's hook or invoke, for the test to
// look at after the app has stopped.
type acquired struct {
	mu    sync.Mutex
	locks []*lock.Lock
}

func (a *acquired) add(lk *lock.Lock) {
	a.mu.Lock()
	a.locks = append(a.locks, lk)
	a.mu.Unlock()
}

func (a *acquired) all() []*lock.Lock {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.locks)
}

// takeable reports the error of TryAcquire of key by a fresh Locker on b
// (nil: it could take the lock at once), releasing what it took.
func takeable(t *testing.T, b fxelection.Backend, key string) error {
	t.Helper()
	l := newLocker(t, b, "other")
	lk, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		return err
	}
	release(t, lk)
	return nil
}

// TestModuleReleasesOnStop: Module provides a Locker on the graph's
// Backend with the supplied Options; a lock taken in an fx.Invoke and one
// taken in an OnStart hook are held while the app runs, and the app's
// stop releases both (another Locker takes them at once, their Contexts
// end with ErrReleased) and closes the Locker.
func TestModuleReleasesOnStop(t *testing.T) {
	opts := fast
	opts.Identity = "app"
	var (
		l     *lock.Locker
		store *memory.Backend
		got   acquired
	)
	app := fxtest.New(t, fx.NopLogger,
		memory.Module,
		lock.Module,
		fx.Supply(opts),
		fx.Populate(&l, &store),
		fx.Invoke(func(l *lock.Locker) error {
			lk, err := l.Acquire(context.Background(), "in-invoke")
			if err == nil {
				got.add(lk)
			}
			return err
		}),
		fx.Invoke(func(lc fx.Lifecycle, l *lock.Locker) {
			lc.Append(fx.StartHook(func(ctx context.Context) error {
				lk, err := l.Acquire(ctx, "on-start")
				if err == nil {
					got.add(lk)
				}
				return err
			}))
		}),
	)
	app.RequireStart()
	if o := l.Options(); o.Identity != "app" || o.LeaseDuration != fast.LeaseDuration || o.RetryPeriod != fast.RetryPeriod {
		t.Errorf("Options() = %+v, want the supplied ones", o)
	}
	if n := l.Held(); n != 2 {
		t.Fatalf("Held() = %d after start, want 2", n)
	}
	for _, key := range []string{"in-invoke", "on-start"} {
		if err := takeable(t, store, key); !errors.Is(err, lock.ErrLocked) {
			t.Errorf("TryAcquire(%s) by another Locker while the app runs: %v, want ErrLocked", key, err)
		}
		lease, err := store.Get(context.Background(), key)
		if err != nil || !strings.HasPrefix(lease.Holder, "app/") {
			t.Errorf("the store's %s: holder %q, %v; want app/…", key, lease.Holder, err)
		}
	}
	app.RequireStop()
	for _, key := range []string{"in-invoke", "on-start"} {
		if err := takeable(t, store, key); err != nil {
			t.Errorf("TryAcquire(%s) by another Locker after the app stopped: %v", key, err)
		}
	}
	for _, lk := range got.all() {
		if cause := context.Cause(lk.Context()); !errors.Is(cause, lock.ErrReleased) {
			t.Errorf("lock %s: Context cause %v after stop, want ErrReleased", lk.Key(), cause)
		}
	}
	if n := l.Held(); n != 0 {
		t.Errorf("Held() = %d after stop", n)
	}
	if _, err := l.TryAcquire(context.Background(), "later"); !errors.Is(err, lock.ErrClosed) {
		t.Errorf("TryAcquire after the app stopped: %v, want ErrClosed", err)
	}
}

// TestModuleDefaults: without supplied Options the Locker has the
// defaults (a default identity: fxelection.DefaultIdentity's, random).
func TestModuleDefaults(t *testing.T) {
	var l *lock.Locker
	app := fxtest.New(t, fx.NopLogger, memory.Module, lock.Module, fx.Populate(&l))
	app.RequireStart().RequireStop()
	o := l.Options()
	if o.Identity == "" || o.LeaseDuration != 15*time.Second ||
		o.RenewDeadline != 10*time.Second || o.RetryPeriod != 2*time.Second {
		t.Errorf("Options() = %+v, want the defaults", o)
	}
}

// lockers takes two named Lockers from the graph.
type lockers struct {
	fx.In
	Reports *lock.Locker `name:"reports"`
	Billing *lock.Locker `name:"billing"`
}

// TestNamed: two Named Lockers in one app, each with its own Options and
// tag, each closed on the app's stop.
func TestNamed(t *testing.T) {
	reports, billing := fast, fast
	reports.Identity, billing.Identity = "reporter", "biller"
	var (
		got   lockers
		store *memory.Backend
	)
	app := fxtest.New(t, fx.NopLogger,
		memory.Module,
		lock.Named("reports", reports),
		lock.Named("billing", billing),
		fx.Populate(&got, &store),
	)
	app.RequireStart()
	if got.Reports == got.Billing || got.Reports.Options().Identity != "reporter" || got.Billing.Options().Identity != "biller" {
		t.Fatalf("named Lockers: reports %q, billing %q", got.Reports.Options().Identity, got.Billing.Options().Identity)
	}
	a, err := got.Reports.TryAcquire(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	b, err := got.Billing.TryAcquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Lease().Holder, "reporter/") || !strings.HasPrefix(b.Lease().Holder, "biller/") {
		t.Errorf("holders %q and %q, want reporter/… and biller/…", a.Lease().Holder, b.Lease().Holder)
	}
	app.RequireStop()
	for _, key := range []string{"r", "b"} {
		if err := takeable(t, store, key); err != nil {
			t.Errorf("TryAcquire(%s) after the app stopped: %v", key, err)
		}
	}
}

// TestModuleInvalidOptions: invalid Options make the app fail to start
// with the error naming the field, even when nothing injects the Locker;
// so does a graph without a Backend.
func TestModuleInvalidOptions(t *testing.T) {
	for name, opt := range map[string]fx.Option{
		"Module": fx.Options(lock.Module, fx.Supply(lock.Options{Timing: fxelection.Timing{RetryPeriod: time.Millisecond}})),
		"Named":  lock.Named("x", lock.Options{Timing: fxelection.Timing{RetryPeriod: time.Millisecond}}),
	} {
		err := fx.New(fx.NopLogger, memory.Module, opt).Err()
		var ce *fxelection.ConfigError
		if !errors.As(err, &ce) || ce.Field != "RetryPeriod" {
			t.Errorf("%s: %v, want a *ConfigError for RetryPeriod", name, err)
		}
	}
	if err := fx.New(fx.NopLogger, lock.Module).Err(); err == nil || !strings.Contains(err.Error(), "missing type: backendkit.Backend") {
		t.Errorf("without a Backend: %v, want a missing-type error", err)
	}
}

// events records a Locker's events by kind.
type events struct {
	mu    sync.Mutex
	kinds []lock.EventKind
}

func (e *events) ObserveLock(ev lock.Event) {
	e.mu.Lock()
	e.kinds = append(e.kinds, ev.Kind)
	e.mu.Unlock()
}

func (e *events) got() []lock.EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.kinds)
}

// TestModuleGroupAndObserver: with an *fxelection.Group and an Observer
// in the graph, the Locker joins the group (and works on its backend) and
// reports to the Observer, unless its Options name an Observer of their
// own.
func TestModuleGroupAndObserver(t *testing.T) {
	graphObs, ownObs := &events{}, &events{}
	own := fast
	own.Observer = ownObs
	var got lockers
	app := fxtest.New(t, fx.NopLogger,
		memory.Module,
		fx.Provide(fxelection.NewGroup),
		fx.Provide(func() lock.Observer { return graphObs }),
		lock.Named("reports", fast),
		lock.Named("billing", own),
		fx.Populate(&got),
	)
	app.RequireStart()
	for _, l := range []*lock.Locker{got.Reports, got.Billing} {
		lk, err := l.TryAcquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		release(t, lk)
	}
	app.RequireStop()
	want := []lock.EventKind{lock.EventAcquire, lock.EventRelease}
	if g := graphObs.got(); !slices.Equal(g, want) {
		t.Errorf("the graph's Observer got %v, want %v (from reports only)", g, want)
	}
	if g := ownObs.got(); !slices.Equal(g, want) {
		t.Errorf("Options.Observer got %v, want %v", g, want)
	}
}

// client stands for an SDK client the application owns: its constructor
// closes it on the app's stop, and the backend on it fails once it is
// closed.
type client struct {
	mu     sync.Mutex
	closed bool
	log    *[]string
}

func (c *client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	*c.log = append(*c.log, "client closed")
}

// clientBackend is a memory backend behind a client: Release fails once
// the client is closed, and logs when it succeeds.
type clientBackend struct {
	*memory.Backend
	c *client
}

func (b *clientBackend) Release(ctx context.Context, lease fxelection.Lease) error {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	if b.c.closed {
		return errors.New("client closed")
	}
	if err := b.Backend.Release(ctx, lease); err != nil {
		return err
	}
	*b.c.log = append(*b.c.log, "released "+lease.Election)
	return nil
}

// TestModuleStopsBeforeBackendClient: fx stops the Locker before the
// client its Backend uses, whatever the order of the options, so held
// locks are released while the client still works.
func TestModuleStopsBeforeBackendClient(t *testing.T) {
	var log []string
	var l *lock.Locker
	app := fxtest.New(t, fx.NopLogger,
		lock.Module, // listed first: the order of construction decides
		fx.Supply(fast),
		fx.Provide(func(b *clientBackend) fxelection.Backend { return b }),
		fx.Provide(func(c *client) *clientBackend { return &clientBackend{Backend: memory.New(), c: c} }),
		fx.Provide(func(lc fx.Lifecycle) *client {
			c := &client{log: &log}
			lc.Append(fx.StopHook(c.Close))
			return c
		}),
		fx.Populate(&l),
	)
	app.RequireStart()
	lk, err := l.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	app.RequireStop() // fails the test if the release failed
	if want := []string{"released k", "client closed"}; !slices.Equal(log, want) {
		t.Errorf("stop order %q, want %q", log, want)
	}
	if lk.Context().Err() == nil {
		t.Error("the lock's Context did not end")
	}
}

// stuckRelease is a backend whose Release ignores its context and waits
// until unblocked.
type stuckRelease struct {
	*memory.Backend
	unblock chan struct{}
}

func (b *stuckRelease) Release(_ context.Context, lease fxelection.Lease) error {
	<-b.unblock
	return b.Backend.Release(context.Background(), lease)
}

// TestHookBoundedWhenBackendIgnoresContext: the stop hook returns by the
// stop context's deadline, with its error, even when the backend's
// Release ignores its context; the release completes in the background
// once the backend returns.
func TestHookBoundedWhenBackendIgnoresContext(t *testing.T) {
	b := &stuckRelease{Backend: memory.New(), unblock: make(chan struct{})}
	var l *lock.Locker
	app := fx.New(fx.NopLogger,
		fx.Supply(fx.Annotate(b, fx.As(new(fxelection.Backend)))),
		lock.Module, fx.Supply(fast),
		fx.Populate(&l),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := app.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop with a stuck backend: %v, want the stop context's error", err)
	}
	close(b.unblock)
	deadline := time.Now().Add(30 * time.Second)
	for l.Held() != 0 { // the background release ends, leaving no goroutine (goleak)
		if time.Now().After(deadline) {
			t.Fatal("the lock was not released within 30s of the backend returning")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := takeable(t, b.Backend, "k"); err != nil {
		t.Errorf("TryAcquire after the background release: %v", err)
	}
}
