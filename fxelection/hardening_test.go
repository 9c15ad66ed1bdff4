package fxelection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// errLog collects OnError calls.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) add(err error) { l.mu.Lock(); l.errs = append(l.errs, err); l.mu.Unlock() }

func (l *errLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// panics returns the PanicErrors among errs, by Where.
func panics(errs []error) map[string]int {
	out := map[string]int{}
	for _, err := range errs {
		var pe *fxelection.PanicError
		if errors.As(err, &pe) {
			out[pe.Where]++
		}
	}
	return out
}

// An observer that panics on every event must not kill the loop: the
// elector keeps renewing, reports each panic, and stops cleanly.
func TestObserverPanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fa := faultinject.New(memory.New())
		var errs errLog
		c := cfg("a")
		c.Callbacks.OnError = errs.add
		e, err := fxelection.New(c, fa)
		if err != nil {
			t.Fatal(err)
		}
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) { panic("observer bug " + ev.Kind.String()) }))
		var seen []fxelection.Event
		var mu sync.Mutex
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
		}))
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * retry)
		synctest.Wait()
		if !e.IsLeader() || fa.Calls(backendkit.OpRenew) < 9 {
			t.Fatalf("leader %v after %d renewals: the loop did not survive the panics", e.IsLeader(), fa.Calls(backendkit.OpRenew))
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if n := panics(errs.all())["Observer"]; n < 10 {
			t.Fatalf("%d observer panics reported to OnError, want one per event", n)
		}
		mu.Lock()
		defer mu.Unlock()
		var panicEvents int
		for _, ev := range seen {
			if ev.Kind == fxelection.EventPanic {
				panicEvents++
				var pe *fxelection.PanicError
				if !errors.As(ev.Err, &pe) || !strings.Contains(pe.Error(), "Observer panicked in election \"jobs\": observer bug") || len(pe.Stack) == 0 {
					t.Fatalf("panic event %+v", ev)
				}
			}
		}
		if panicEvents < 10 {
			t.Fatalf("%d panic events", panicEvents)
		}
		if last := seen[len(seen)-1]; last.Kind != fxelection.EventDetached {
			t.Fatalf("last event %v, want detached", last.Kind)
		}
	})
}

// Each callback panicking is recovered and reported; the callbacks after
// it are still delivered, in order, and the elector goes on campaigning.
func TestCallbackPanicsAreRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		fa := faultinject.New(store)
		var errs errLog
		var l log
		c := cfg("a")
		c.Callbacks.OnStartedLeading = func(ctx context.Context) {
			lease, _ := fxelection.LeaseFromContext(ctx)
			l.add("started %d", lease.Term)
			panic("started bug")
		}
		c.Callbacks.OnStoppedLeading = func(lease fxelection.Lease, _ fxelection.StopReason) {
			l.add("stopped %d", lease.Term)
			panic(fmt.Errorf("stopped bug"))
		}
		c.Callbacks.OnNewLeader = func(fxelection.Lease) { l.add("leader"); panic(nil) }
		var onErrorPanics atomic.Int32
		c.Callbacks.OnError = func(err error) {
			errs.add(err)
			if errors.Is(err, faultinject.ErrInjected) {
				onErrorPanics.Add(1)
				panic("error callback bug")
			}
		}
		e := start(t, c, fa)
		synctest.Wait()
		// Leader work that panicked counts as finished: Stop need not wait.
		fa.Fail(backendkit.OpRenew, backendkit.ErrLeaseLost) // lose it: stopped, then re-acquire
		time.Sleep(3 * retry)
		fa.Fail(backendkit.OpRenew, nil)
		fa.Fail(backendkit.OpRenew, faultinject.ErrInjected) // OnError panics
		time.Sleep(retry)
		fa.Fail(backendkit.OpRenew, nil)
		time.Sleep(3 * retry)
		synctest.Wait()
		if err := e.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		got := panics(errs.all())
		for _, where := range []string{"OnStartedLeading", "OnStoppedLeading", "OnNewLeader"} {
			if got[where] == 0 {
				t.Errorf("no panic reported for %s: %v", where, got)
			}
		}
		if got["OnError"] != 0 {
			t.Errorf("a panic in OnError was reported to OnError: %v", got)
		}
		if onErrorPanics.Load() == 0 {
			t.Error("OnError never panicked: the test did not exercise it")
		}
		evs := l.events()
		var pairs []string
		for _, ev := range evs {
			if strings.HasPrefix(ev, "started") || strings.HasPrefix(ev, "stopped") {
				pairs = append(pairs, ev[:7])
			}
		}
		if len(pairs) < 4 || len(pairs)%2 != 0 {
			t.Fatalf("callbacks %v", evs)
		}
		for i, p := range pairs {
			if want := []string{"started", "stopped"}[i%2]; p != want {
				t.Fatalf("callbacks out of order: %v", evs)
			}
		}
	})
}

// secretBackend fails with errors that carry secrets, as SDK errors do.
type secretBackend struct {
	fxelection.Backend
	failAcquire, failRenew, failRelease atomic.Bool
}

func secretErr(op string) error {
	return fmt.Errorf(`%s: Get "https://x/y?sig=SECRET&se=1": dial tcp: host=db password=SECRET user=u: %w`, op, faultinject.ErrInjected)
}

func (s *secretBackend) Acquire(ctx context.Context, r backendkit.AcquireRequest) (fxelection.Lease, error) {
	if s.failAcquire.Load() {
		return fxelection.Lease{}, secretErr("acquire")
	}
	return s.Backend.Acquire(ctx, r)
}

func (s *secretBackend) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if s.failRenew.Load() {
		return fxelection.Lease{}, secretErr("renew")
	}
	return s.Backend.Renew(ctx, l)
}

func (s *secretBackend) Release(ctx context.Context, l fxelection.Lease) error {
	if s.failRelease.Load() {
		return secretErr("release")
	}
	return s.Backend.Release(ctx, l)
}

// Every store failure passes through RedactError before it reaches
// OnError, observers, logs, Status and Stop's result.
func TestStoreErrorsAreRedacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sb := &secretBackend{Backend: memory.New()}
		var logs bytes.Buffer
		var logMu sync.Mutex
		c := cfg("a")
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var errs errLog
		c.Callbacks.OnError = errs.add
		e, err := fxelection.New(c, sb)
		if err != nil {
			t.Fatal(err)
		}
		var evErrs errLog
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Err != nil {
				evErrs.add(ev.Err)
			}
		}))
		sb.failAcquire.Store(true)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * retry)
		synctest.Wait()
		statusErr := e.Status().LastError
		sb.failAcquire.Store(false)
		time.Sleep(4 * retry)
		if !e.IsLeader() {
			t.Fatal("not leading")
		}
		sb.failRenew.Store(true)
		time.Sleep(retry)
		sb.failRenew.Store(false)
		sb.failRelease.Store(true)
		stopErr := e.Stop(context.Background())
		if stopErr == nil {
			t.Fatal("Stop hid the release failure")
		}
		all := append(append(errs.all(), evErrs.all()...), statusErr, stopErr)
		ops := map[string]bool{}
		for _, err := range all {
			if err == nil {
				t.Fatal("missing error")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("secret leaked: %v", err)
			}
			if !errors.Is(err, faultinject.ErrInjected) {
				t.Fatalf("sentinel lost: %v", err)
			}
			for _, op := range []string{"acquire", "renew", "release"} {
				if strings.Contains(err.Error(), op+": Get") {
					ops[op] = true
				}
			}
		}
		if len(ops) != 3 {
			t.Fatalf("not every operation's failure was seen: %v", ops)
		}
		var oe *fxelection.OpError
		if !errors.As(statusErr, &oe) || oe.Op != backendkit.OpAcquire {
			t.Fatalf("Status.LastError = %v", statusErr)
		}
		logMu.Lock()
		defer logMu.Unlock()
		if strings.Contains(logs.String(), "SECRET") || !strings.Contains(logs.String(), "password=xxxxx") {
			t.Fatalf("logs:\n%s", logs.String())
		}
	})
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Stop returns within its bound even when a backend call ignores its
// context and never returns, and says which call it left running. An
// elector that never led is not blamed for leader work.
func TestStopBoundedWhenBackendIgnoresContext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader bool
		wedge  string
		want   string
	}{
		{"leader in renew", true, backendkit.OpRenew, "backend renew call still running"},
		{"follower in acquire", false, backendkit.OpAcquire, "backend acquire call still running"},
		{"leader in release", true, backendkit.OpRelease, "backend release call still running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				if !tc.leader {
					start(t, cfg("other"), store)
					synctest.Wait()
				}
				fa := faultinject.New(store)
				defer fa.Wedge(tc.wedge, false) // let the abandoned call end
				var l log
				c := cfg("a")
				c.StopTimeout = 5 * time.Second
				c.Callbacks.OnStartedLeading = func(ctx context.Context) { l.add("started"); <-ctx.Done() }
				c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) { l.add("stopped") }
				e, err := fxelection.New(c, fa)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if e.IsLeader() != tc.leader {
					t.Fatalf("leader = %v", e.IsLeader())
				}
				fa.Wedge(tc.wedge, true)
				time.Sleep(3 * retry) // the loop is now stuck in the call (unless it is the release)
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				began := time.Now()
				err = e.Stop(ctx)
				took := time.Since(began)
				if limit := 100*time.Millisecond + retry + 20*time.Millisecond; took > limit {
					t.Fatalf("Stop took %v, want at most %v", took, limit)
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Stop = %v, want %q", err, tc.want)
				}
				if strings.Contains(err.Error(), "leader work") {
					t.Fatalf("Stop blamed leader work: %v", err)
				}
				if e.IsLeader() || e.Status().Leading {
					t.Fatal("still leading after Stop")
				}
				if got := l.events(); tc.leader && (len(got) != 2 || got[0] != "started" || got[1] != "stopped") {
					t.Fatalf("callbacks %v, want [started stopped]", got)
				}
			})
		})
	}
}

// blockingNotifier's Subscribe (or its cancel) blocks until released, as
// a push listener on a hung store might.
type blockingNotifier struct {
	fxelection.Backend
	blockSubscribe bool
	release        chan struct{}
	subscribed     atomic.Bool
}

func (n *blockingNotifier) Subscribe(string, func()) func() {
	if n.blockSubscribe {
		<-n.release
		n.subscribed.Store(true)
		return func() {}
	}
	n.subscribed.Store(true)
	return func() { <-n.release }
}

// A Subscribe that blocks must not keep the elector from campaigning or
// Stop from returning; a cancel that blocks holds Stop only to its bound.
func TestPushListenerNeverWedges(t *testing.T) {
	t.Run("Subscribe blocks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := &blockingNotifier{Backend: memory.New(), blockSubscribe: true, release: make(chan struct{})}
			e, err := fxelection.New(cfg("a"), n)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if !e.IsLeader() {
				t.Fatal("a blocked Subscribe kept the elector from acquiring")
			}
			began := time.Now()
			if err := e.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if took := time.Since(began); took > 0 {
				t.Fatalf("Stop took %v of fake time", took)
			}
			close(n.release) // Subscribe returns; the listener cancels at once and ends
			synctest.Wait()
			if !n.subscribed.Load() {
				t.Fatal("Subscribe did not return")
			}
		})
	})
	t.Run("cancel blocks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := &blockingNotifier{Backend: memory.New(), release: make(chan struct{})}
			c := cfg("a")
			c.StopTimeout = time.Second
			e, err := fxelection.New(c, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			began := time.Now()
			err = e.Stop(context.Background())
			if took := time.Since(began); took > c.StopTimeout+retry {
				t.Fatalf("Stop took %v", took)
			}
			if err == nil || !strings.Contains(err.Error(), "push listener cancel still running") {
				t.Fatalf("Stop = %v", err)
			}
			if _, err := n.Get(context.Background(), "jobs"); !errors.Is(err, backendkit.ErrNoLease) {
				t.Fatalf("lease not released: %v", err)
			}
			close(n.release)
		})
	})
}

// OnStoppedLeading never comes before its OnStartedLeading, even when the
// leadership ends right after it began (real time, many times over).
func TestStoppedNeverBeforeStarted(t *testing.T) {
	store := memory.New()
	for i := range 300 {
		var l log
		acquired := make(chan struct{})
		var once sync.Once
		c := fxelection.Config{Name: fmt.Sprintf("order-%d", i), Identity: "a"}
		c.Callbacks.OnStartedLeading = func(context.Context) { l.add("started") }
		c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) { l.add("stopped") }
		e, err := fxelection.New(c, store)
		if err != nil {
			t.Fatal(err)
		}
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventStartedLeading {
				once.Do(func() { close(acquired) })
			}
		}))
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-acquired
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := l.events(); len(got) != 2 || got[0] != "started" || got[1] != "stopped" {
			t.Fatalf("run %d: callbacks %v, want [started stopped]", i, got)
		}
	}
}

// Status().Leading agrees with IsLeader, also after the renew-deadline
// timer has ended belief while the loop is still stuck in a renewal.
func TestStatusLeadingAgreesWithIsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fa := faultinject.New(memory.New())
		defer fa.Wedge(backendkit.OpRenew, false)
		e := start(t, cfg("a"), fa)
		synctest.Wait()
		check := func(when string) {
			t.Helper()
			s := e.Status()
			if s.Leading != e.IsLeader() {
				t.Fatalf("%s: Status().Leading = %v, IsLeader() = %v", when, s.Leading, e.IsLeader())
			}
		}
		check("leading")
		lastRenew := e.Status().LastRenew
		fa.Wedge(backendkit.OpRenew, true)
		time.Sleep(time.Until(lastRenew.Add(deadline - time.Millisecond)))
		synctest.Wait()
		check("just before the deadline")
		if !e.IsLeader() {
			t.Fatal("stopped leading before the deadline")
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		check("just after the deadline")
		s := e.Status()
		if e.IsLeader() || !s.Holding || s.InFlight != backendkit.OpRenew || s.InFlightSince.IsZero() {
			t.Fatalf("after the deadline with the loop stuck: leader %v, status %+v", e.IsLeader(), s)
		}
		fa.Wedge(backendkit.OpRenew, false)
		synctest.Wait()
		check("after the loop stepped down (and took its own lease back)")
		if s := e.Status(); s.InFlight != "" {
			t.Fatalf("status after the step-down: %+v", s)
		}
	})
}

// Elections acquired at the same instant must not renew in lockstep: the
// first renewal comes at a random point of [RetryPeriod/2, RetryPeriod),
// and no renewal comes later than RetryPeriod after the last success.
func TestFirstRenewalsSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		const n = 40
		type rec struct {
			mu        sync.Mutex
			acquired  time.Time
			renewals  []time.Time
			successes []time.Time
		}
		recs := make([]*rec, n)
		var electors []*fxelection.Elector
		for i := range n {
			r := &rec{}
			recs[i] = r
			c := cfg("a")
			c.Name = fmt.Sprintf("job-%d", i)
			e, err := fxelection.New(c, store)
			if err != nil {
				t.Fatal(err)
			}
			e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
				if ev.Kind != fxelection.EventOperation || ev.Err != nil {
					return
				}
				r.mu.Lock()
				defer r.mu.Unlock()
				switch ev.Op {
				case backendkit.OpAcquire:
					r.acquired = ev.Time.Add(-ev.Duration)
					r.successes = append(r.successes, r.acquired)
				case backendkit.OpRenew:
					r.renewals = append(r.renewals, ev.Time.Add(-ev.Duration))
					r.successes = append(r.successes, ev.Time.Add(-ev.Duration))
				}
			}))
			electors = append(electors, e)
		}
		for _, e := range electors {
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * retry)
		synctest.Wait()
		for _, e := range electors {
			if err := e.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		offsets := map[time.Duration]bool{}
		lo, hi := retry, time.Duration(0)
		for i, r := range recs {
			if len(r.renewals) < 9 {
				t.Fatalf("election %d: %d renewals", i, len(r.renewals))
			}
			first := r.renewals[0].Sub(r.acquired)
			if first < retry/2 || first >= retry {
				t.Fatalf("election %d: first renewal %v after the acquisition, want in [%v, %v)", i, first, retry/2, retry)
			}
			offsets[first] = true
			lo, hi = min(lo, first), max(hi, first)
			for j := 1; j < len(r.successes); j++ {
				if gap := r.successes[j].Sub(r.successes[j-1]); gap > retry {
					t.Fatalf("election %d: %v between successful renewals, more than RetryPeriod", i, gap)
				}
			}
		}
		if len(offsets) < n*3/4 || hi-lo < retry/4 {
			t.Fatalf("first renewals not spread: %d distinct offsets in [%v, %v]", len(offsets), lo, hi)
		}
	})
}

func TestConfigBounds(t *testing.T) {
	const huge = time.Duration(1 << 62)
	ok := func(c *fxelection.Config) {}
	tests := []struct {
		name    string
		mod     func(*fxelection.Config)
		wantErr string
	}{
		{"defaults", ok, ""},
		{"retry at the minimum", func(c *fxelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 30*time.Millisecond, 20*time.Millisecond, 10*time.Millisecond
		}, ""},
		{"retry 1ns", func(c *fxelection.Config) { c.RetryPeriod = 1 }, "fxelection: RetryPeriod: must be at least 10ms (is 1ns)"},
		{"retry just below the minimum", func(c *fxelection.Config) { c.RetryPeriod = 10*time.Millisecond - 1 }, "fxelection: RetryPeriod: must be at least 10ms (is 9.999999ms)"},
		{"lease at the maximum", func(c *fxelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = backendkit.MaxRecordDuration, backendkit.MaxRecordDuration-1, backendkit.MaxRecordDuration/2
			c.MaxBackoff, c.StopTimeout = backendkit.MaxRecordDuration, backendkit.MaxRecordDuration
		}, ""},
		{"lease above the maximum", func(c *fxelection.Config) { c.LeaseDuration = backendkit.MaxRecordDuration + 1 }, "fxelection: LeaseDuration: must be at most 8760h0m0s (is 8760h0m0.000000001s)"},
		{"lease huge", func(c *fxelection.Config) { c.LeaseDuration = huge }, "fxelection: LeaseDuration: must be at most 8760h0m0s (is 1281023h53m38.427387904s)"},
		{"lease max int64", func(c *fxelection.Config) { c.LeaseDuration = math.MaxInt64 }, "LeaseDuration: must be at most 8760h0m0s (is 2562047h47m16.854775807s)"},
		{"deadline huge", func(c *fxelection.Config) { c.RenewDeadline = huge }, "fxelection: RenewDeadline: must be at most 8760h0m0s (is 1281023h53m38.427387904s)"},
		{"retry huge (1.2× would overflow)", func(c *fxelection.Config) { c.RetryPeriod = math.MaxInt64 }, "fxelection: RetryPeriod: must be at most 8760h0m0s (is 2562047h47m16.854775807s)"},
		{"retry 1<<62 with lease and deadline huge", func(c *fxelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = math.MaxInt64, math.MaxInt64-1, huge
		}, "LeaseDuration: must be at most 8760h0m0s (is 2562047h47m16.854775807s)"},
		{"stop timeout huge (lease + stop timeout would overflow)", func(c *fxelection.Config) { c.StopTimeout = math.MaxInt64 }, "fxelection: StopTimeout: must be at most 8760h0m0s (is 2562047h47m16.854775807s)"},
		{"max backoff huge", func(c *fxelection.Config) { c.MaxBackoff = huge }, "fxelection: MaxBackoff: must be at most 8760h0m0s (is 1281023h53m38.427387904s)"},
		{"negative min int64", func(c *fxelection.Config) { c.RenewDeadline = math.MinInt64 }, "fxelection: RenewDeadline: must be positive (is -2562047h47m16.854775808s)"},
		{"1.2 × retry exactly the deadline", func(c *fxelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 2*time.Second, 1200*time.Millisecond, time.Second
		}, "fxelection: RenewDeadline: must be longer than 1.2 × RetryPeriod (is 1.2s, 1.2 × RetryPeriod 1.2s)"},
		{"1.2 × retry just under the deadline", func(c *fxelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 2*time.Second, 1200*time.Millisecond+1, time.Second
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fxelection.Config{Name: "jobs"}
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if _, err := fxelection.New(c, memory.New()); err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestBackoffNeverOverflows(t *testing.T) {
	for _, tc := range []struct{ base, max time.Duration }{
		{time.Second, 30 * time.Second},
		{1 << 62, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
		{1, math.MaxInt64},
		{3, 1<<63 - 2},
	} {
		for n := range 80 {
			got := backendkit.Backoff(n, tc.base, tc.max)
			if got < min(tc.base, tc.max) {
				t.Fatalf("Backoff(%d, %v, %v) = %v: below base (overflow?)", n, tc.base, tc.max, got)
			}
		}
	}
	if got := backendkit.Backoff(5, time.Second, 10*time.Second); got < 10*time.Second || got > 12*time.Second {
		t.Fatalf("Backoff(5, 1s, 10s) = %v, want in [10s, 12s]", got)
	}
}

// With a store that hangs but honours contexts (faultinject.Backend.Hang),
// a follower's Stop returns at once, without an error. A leader's returns
// within its bound: its renewal in flight is let finish until Stop's
// deadline (see Stop), then its release gets the grace period, fails and
// says so.
func TestStopWithHungStore(t *testing.T) {
	for _, leader := range []bool{false, true} {
		t.Run(fmt.Sprintf("leader=%v", leader), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				if !leader {
					start(t, cfg("other"), store)
					synctest.Wait()
				}
				fa := faultinject.New(store)
				e, err := fxelection.New(cfg("a"), fa)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				fa.Hang(true)
				time.Sleep(retry + retry/3) // a call is now hanging
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				began := time.Now()
				err = e.Stop(ctx)
				limit := 100 * time.Millisecond
				if leader {
					limit += retry + 20*time.Millisecond
				}
				if took := time.Since(began); took > limit {
					t.Fatalf("Stop took %v, want at most %v", took, limit)
				}
				switch {
				case !leader && err != nil:
					t.Fatalf("follower's Stop = %v", err)
				case leader && (err == nil || strings.Contains(err.Error(), "leader work") || !errors.Is(err, context.DeadlineExceeded)):
					t.Fatalf("leader's Stop = %v, want the release's deadline", err)
				}
			})
		})
	}
}
