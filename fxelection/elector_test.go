package fxelection_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Timings used on fake time.
const (
	lease    = 3 * time.Second
	deadline = 2 * time.Second
	retry    = 500 * time.Millisecond
)

func cfg(id string) fxelection.Config {
	return fxelection.Config{Name: "jobs", Identity: id, Timing: fxelection.Timing{LeaseDuration: lease, RenewDeadline: deadline, RetryPeriod: retry, MaxBackoff: 8 * retry}}
}

func start(t *testing.T, c fxelection.Config, b fxelection.Backend) *fxelection.Elector {
	t.Helper()
	e, err := fxelection.New(c, b)
	return started(t, e, err)
}

// startIn is start for an elector in group g.
func startIn(t *testing.T, c fxelection.Config, g *fxelection.Group) *fxelection.Elector {
	t.Helper()
	e, err := g.New(c)
	return started(t, e, err)
}

// started starts e (made with err), stopping it when the test ends.
func started(t *testing.T, e *fxelection.Elector, err error) *fxelection.Elector {
	t.Helper()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

// newGroup returns a Group on b.
func newGroup(t *testing.T, b fxelection.Backend) *fxelection.Group {
	t.Helper()
	g, err := fxelection.NewGroup(b)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// log records timestamped callback events in order.
type log struct {
	mu  sync.Mutex
	evs []string
	at  []time.Time
}

func (l *log) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, fmt.Sprintf(format, args...))
	l.at = append(l.at, time.Now())
}

func (l *log) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.evs...)
}

// opTimes records when each backend operation of kind op started.
func opTimes(e *fxelection.Elector, op string) func() []time.Time {
	var mu sync.Mutex
	var ts []time.Time
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if ev.Kind == fxelection.EventOperation && ev.Op == op {
			mu.Lock()
			ts = append(ts, time.Now().Add(-ev.Duration))
			mu.Unlock()
		}
	}))
	return func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), ts...)
	}
}

func TestLeaderStepsDownBeforeLeaseCanExpireElsewhere(t *testing.T) {
	for _, fault := range []string{"errors", "hang", "ignores-context"} {
		t.Run(fault, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				release := make(chan struct{})
				sb := &stubborn{Backend: store, release: release}
				fa := faultinject.New(sb)
				var cancelledAt time.Time
				var leaderWork sync.WaitGroup
				leaderWork.Add(1)
				ca := cfg("a")
				var once sync.Once
				ca.Callbacks.OnStartedLeading = func(ctx context.Context) {
					<-ctx.Done()
					once.Do(func() { // only the first leadership matters here
						cancelledAt = time.Now()
						leaderWork.Done()
					})
				}
				a := start(t, ca, fa)
				synctest.Wait()
				if !a.IsLeader() {
					t.Fatal("a does not lead")
				}
				renews := opTimes(a, backendkit.OpRenew)
				time.Sleep(5*retry + retry/5) // a few good renewals, then between two
				synctest.Wait()
				lastGood := renews()[len(renews())-1]

				switch fault {
				case "errors":
					fa.Partition(true)
				case "hang":
					fa.Hang(true)
				case "ignores-context":
					sb.on.Store(true)
				}
				b := start(t, cfg("b"), store)
				leaderWork.Wait()
				if want := lastGood.Add(deadline); cancelledAt.After(want) {
					t.Fatalf("leader context cancelled at +%v, after the renew deadline +%v", cancelledAt.Sub(lastGood), want.Sub(lastGood))
				}
				if a.IsLeader() {
					t.Fatal("a still believes it leads after its leader context ended")
				}
				for !b.IsLeader() {
					time.Sleep(10 * time.Millisecond)
				}
				tookOver := time.Now()
				if tookOver.Before(lastGood.Add(lease)) {
					t.Fatalf("b took over %v after a's last renewal, before the lease (%v) expired", tookOver.Sub(lastGood), lease)
				}
				if !cancelledAt.Before(tookOver) {
					t.Fatal("a's leader context outlived b's takeover")
				}
				close(release)
				fa.Partition(false)
				fa.Hang(false)
			})
		})
	}
}

// stubborn makes renewals block until release is closed, ignoring their
// context, as a broken client library might, once stubbornOn is set.
type stubborn struct {
	fxelection.Backend
	release chan struct{}
	on      atomic.Bool
}

func (s *stubborn) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if s.on.Load() {
		<-s.release
		return fxelection.Lease{}, errors.New("stubborn renewal gave up")
	}
	return s.Backend.Renew(ctx, l)
}

func TestBackoffGrowsAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		fa := faultinject.New(store)
		fa.Fail(backendkit.OpAcquire, faultinject.ErrInjected)
		var errs []error
		var mu sync.Mutex
		c := cfg("a")
		c.Callbacks.OnError = func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		e, err := fxelection.New(c, fa)
		if err != nil {
			t.Fatal(err)
		}
		acquires := opTimes(e, backendkit.OpAcquire)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(context.Background())
		time.Sleep(40 * retry)
		ts := acquires()
		if len(ts) < 6 {
			t.Fatalf("only %d attempts", len(ts))
		}
		for i := 2; i < len(ts); i++ {
			gap, prev := ts[i].Sub(ts[i-1]), ts[i-1].Sub(ts[i-2])
			if gap > 8*retry {
				t.Fatalf("gap %v exceeds MaxBackoff %v", gap, 8*retry)
			}
			if prev < 4*retry && gap < prev {
				t.Fatalf("backoff shrank from %v to %v while failing: %v", prev, gap, ts)
			}
		}
		if g := ts[1].Sub(ts[0]); g < retry || g >= 2*retry {
			t.Fatalf("first backoff %v, want [%v, %v)", g, retry, 2*retry)
		}
		if g := ts[len(ts)-1].Sub(ts[len(ts)-2]); g < 4*retry {
			t.Fatalf("backoff did not grow: last gap %v", g)
		}
		synctest.Wait()
		mu.Lock()
		var oe *fxelection.OpError
		if len(errs) != len(ts) || !errors.As(errs[0], &oe) || oe.Op != backendkit.OpAcquire || !errors.Is(errs[0], faultinject.ErrInjected) {
			t.Fatalf("%d error callbacks for %d failures; first %v", len(errs), len(ts), errs[0])
		}
		mu.Unlock()

		// Success resets the backoff: after the next success, a failure is
		// retried one retry period later, not at the capped backoff.
		store2Holder := start(t, cfg("other"), store) // holds the lease so a stays follower
		_ = store2Holder
		fa.Fail(backendkit.OpAcquire, nil)
		time.Sleep(10 * retry) // a sees "held" (no error): backoff reset
		n := len(acquires())
		fa.Fail(backendkit.OpAcquire, faultinject.ErrInjected)
		time.Sleep(5 * retry)
		ts = acquires()[n-1:]
		if g := ts[2].Sub(ts[1]); g >= 2*retry {
			t.Fatalf("backoff not reset after success: gap %v", g)
		}
	})
}

func TestStartedStoppedPaired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		fa := faultinject.New(store)
		var l log
		c := cfg("a")
		c.Callbacks.OnStartedLeading = func(ctx context.Context) {
			lease, _ := fxelection.LeaseFromContext(ctx)
			l.add("started %d", lease.Term)
		}
		c.Callbacks.OnStoppedLeading = func(lease fxelection.Lease, r fxelection.StopReason) { l.add("stopped %d", lease.Term) }
		e := start(t, c, fa)
		for range 3 {
			synctest.Wait()
			fa.Fail(backendkit.OpRenew, backendkit.ErrLeaseLost)
			time.Sleep(2 * retry)
			fa.Fail(backendkit.OpRenew, nil)
			// It re-campaigns and takes its own lease back (same term: the
			// store still names it holder).
			time.Sleep(4 * retry)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		evs := l.events()
		if len(evs) < 6 || len(evs)%2 != 0 {
			t.Fatalf("events %v, want several started/stopped pairs", evs)
		}
		for i, ev := range evs {
			if want := []string{"started", "stopped"}[i%2]; ev[:len(want)] != want {
				t.Fatalf("event %d = %q, want %s…: %v", i, ev, want, evs)
			}
		}
	})
}

func TestBlockedCallbacksDoNotDelayRenewals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unblock := make(chan struct{})
		c := cfg("a")
		c.Callbacks.OnNewLeader = func(fxelection.Lease) { <-unblock }
		c.Callbacks.OnError = func(error) { <-unblock }
		c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) { <-unblock }
		fa := faultinject.New(memory.New())
		e := start(t, c, fa)
		synctest.Wait()
		before := fa.Calls(backendkit.OpRenew)
		time.Sleep(20 * retry)
		synctest.Wait()
		if got := fa.Calls(backendkit.OpRenew) - before; got < 19 {
			t.Fatalf("%d renewals in 20 retry periods with a blocked callback", got)
		}
		if !e.IsLeader() {
			t.Fatal("lost leadership while a callback blocked")
		}
		close(unblock)
	})
}

func TestStopDrainsThenReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		var workDone time.Time
		c := cfg("a")
		c.Callbacks.OnStartedLeading = func(ctx context.Context) {
			<-ctx.Done()
			time.Sleep(700 * time.Millisecond) // flushing work after cancellation
			workDone = time.Now()
		}
		a := start(t, c, store)
		synctest.Wait()
		var releasedAt time.Time
		a.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventOperation && ev.Op == backendkit.OpRelease && ev.Err == nil {
				releasedAt = time.Now()
			}
		}))
		b := start(t, cfg("b"), store)
		synctest.Wait()
		stopAt := time.Now()
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if releasedAt.IsZero() || releasedAt.Before(workDone) {
			t.Fatalf("released at %v, work done at %v: release must follow the drain", releasedAt, workDone)
		}
		synctest.Wait() // b wakes on the release (push) and acquires
		if !b.IsLeader() {
			t.Fatal("b does not lead right after a's release")
		}
		if took := time.Since(stopAt); took > time.Second {
			t.Fatalf("hand-over took %v", took)
		}
	})
}

func TestStopWithExpiredContextReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		stuck := make(chan struct{})
		c := cfg("a")
		c.StopTimeout = 3 * time.Second
		c.Callbacks.OnStartedLeading = func(ctx context.Context) { <-stuck } // ignores ctx
		a := start(t, c, store)
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		began := time.Now()
		err := a.Stop(ctx)
		if took := time.Since(began); took > c.StopTimeout {
			t.Fatalf("Stop with a cancelled context took %v", took)
		}
		if err == nil {
			t.Fatal("Stop returned nil although leader work never finished")
		}
		// The release still happened: another candidate gets the lease now.
		if _, err := store.Get(context.Background(), "jobs"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("lease not released: %v", err)
		}
		close(stuck)
	})
}

func TestKeepLeaseOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		c := cfg("a")
		c.KeepLeaseOnStop = true
		a := start(t, c, store)
		synctest.Wait()
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if l, err := store.Get(context.Background(), "jobs"); err != nil || l.Holder != "a" {
			t.Fatalf("lease not kept: %+v, %v", l, err)
		}
	})
}

func TestResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := start(t, cfg("a"), store)
		synctest.Wait()
		b := start(t, cfg("b"), store)
		synctest.Wait()
		la, _ := a.Lease()
		if err := b.Resign(context.Background()); err != nil {
			t.Fatalf("Resign by a follower: %v", err)
		}
		if err := a.Resign(context.Background()); err != nil {
			t.Fatalf("Resign: %v", err)
		}
		if a.IsLeader() {
			t.Fatal("a leads after resigning")
		}
		synctest.Wait()
		lb, ok := b.Lease()
		if !ok || lb.Term <= la.Term {
			t.Fatalf("b's lease after a resigned: %+v %v (a's term %d)", lb, ok, la.Term)
		}
		time.Sleep(3 * retry)
		if l, ok := a.Leader(); !ok || l.Holder != "b" {
			t.Fatalf("a sees leader %+v, want b", l)
		}
	})
}

func TestRecampaign(t *testing.T) {
	for _, no := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoRecampaign=%v", no), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				fa := faultinject.New(store)
				c := cfg("a")
				c.NoRecampaign = no
				a := start(t, c, fa)
				synctest.Wait()
				la, _ := a.Lease()
				// Someone else takes over: a's renewals are refused.
				fa.Fail(backendkit.OpRenew, backendkit.ErrLeaseLost)
				_ = store.Release(context.Background(), la)
				b := start(t, cfg("b"), store)
				time.Sleep(2 * retry)
				fa.Fail(backendkit.OpRenew, nil)
				if a.IsLeader() || !b.IsLeader() {
					t.Fatal("b should lead")
				}
				_ = b.Stop(context.Background())
				time.Sleep(3 * retry)
				if got := a.IsLeader(); got == no {
					t.Fatalf("NoRecampaign=%v: a leads = %v after b left", no, got)
				}
				if _, err := a.TryAcquire(context.Background()); no && !errors.Is(err, fxelection.ErrNotRunning) {
					t.Fatalf("TryAcquire after the campaign ended: %v", err)
				}
			})
		})
	}
}

func TestRunIfLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		fa := faultinject.New(store)
		a := start(t, cfg("a"), fa)
		synctest.Wait()
		b := start(t, cfg("b"), store)
		synctest.Wait()
		ran, err := b.RunIfLeader(context.Background(), func(context.Context) error { return nil })
		if ran || err != nil {
			t.Fatalf("follower ran work: %v %v", ran, err)
		}
		workErr := errors.New("work failed")
		ran, err = a.RunIfLeader(context.Background(), func(ctx context.Context) error {
			l, ok := fxelection.LeaseFromContext(ctx)
			if !ok || l.Holder != "a" || l.Term == 0 {
				t.Errorf("lease in context: %+v %v", l, ok)
			}
			fa.Partition(true) // lose leadership while working
			<-ctx.Done()
			return workErr
		})
		if !ran || !errors.Is(err, workErr) {
			t.Fatalf("RunIfLeader = %v, %v", ran, err)
		}
		if a.IsLeader() {
			t.Fatal("a still leads")
		}
		fa.Partition(false)
	})
}

func TestTryAcquireAndPushWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		slow := cfg("b")
		slow.RetryPeriod, slow.RenewDeadline, slow.LeaseDuration, slow.MaxBackoff = 10*time.Second, 20*time.Second, 30*time.Second, 0
		a := start(t, cfg("a"), store)
		synctest.Wait()
		if ok, err := a.TryAcquire(context.Background()); !ok || err != nil {
			t.Fatalf("TryAcquire by the leader: %v %v", ok, err)
		}
		// b polls only every 10s, but hears a's release at once.
		b := start(t, slow, store)
		synctest.Wait()
		la, _ := a.Lease()
		if l, ok := b.Leader(); !ok || l.Holder != "a" || l.Term != la.Term || len(l.Metadata) != 0 {
			t.Fatalf("follower sees %+v %v", l, ok)
		}
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b did not acquire on the push wake-up")
		}
		_ = b.Stop(context.Background())

		// Without push, TryAcquire skips the wait.
		c := cfg("c")
		c.RetryPeriod, c.RenewDeadline, c.LeaseDuration, c.MaxBackoff = 10*time.Second, 20*time.Second, 30*time.Second, 0
		noPush := noNotify{store}
		holder := start(t, cfg("h"), noPush)
		synctest.Wait()
		e := start(t, c, noPush)
		synctest.Wait()
		if ok, err := e.TryAcquire(context.Background()); ok || err != nil {
			t.Fatalf("TryAcquire while held: %v %v", ok, err)
		}
		_ = holder.Stop(context.Background())
		if ok, err := e.TryAcquire(context.Background()); !ok || err != nil {
			t.Fatalf("TryAcquire after release: %v %v", ok, err)
		}
		if !e.IsLeader() {
			t.Fatal("not leader after a successful TryAcquire")
		}
	})
}

// noNotify hides a backend's backendkit.Notifier.
type noNotify struct{ fxelection.Backend }

func TestLifecycleErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := fxelection.New(cfg("a"), memory.New())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.TryAcquire(context.Background()); !errors.Is(err, fxelection.ErrNotRunning) {
			t.Fatalf("TryAcquire before Start: %v", err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatalf("second Start: %v", err)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if err := e.Start(context.Background()); !errors.Is(err, fxelection.ErrStopped) {
			t.Fatalf("Start after Stop: %v", err)
		}
		if st := e.Status(); st.Running || st.Leading {
			t.Fatalf("status after stop: %+v", st)
		}
		if _, err := fxelection.New(cfg("a"), nil); err == nil {
			t.Fatal("New with a nil backend succeeded")
		}
	})
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*fxelection.Config)
		wantErr string
	}{
		{"defaults", func(c *fxelection.Config) {}, ""},
		{"sub-second", func(c *fxelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 300*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
		}, ""},
		{"name required", func(c *fxelection.Config) { c.Name = "" }, "fxelection: Name: required"},
		{"name too long", func(c *fxelection.Config) { c.Name = fmt.Sprintf("%0201d", 0) }, "fxelection: Name: must be at most 200 bytes (is 201)"},
		{"name not printable", func(c *fxelection.Config) { c.Name = "a\nb" }, "fxelection: Name: must be printable (byte 1 is a control character)"},
		{"name not utf8", func(c *fxelection.Config) { c.Name = "a\xffb" }, "must be valid UTF-8"},
		{"identity not printable", func(c *fxelection.Config) { c.Identity = "x\x00" }, "fxelection: Identity"},
		{"metadata empty key", func(c *fxelection.Config) { c.Metadata = map[string]string{"": "x"} }, "fxelection: Metadata: empty key"},
		{"metadata too big", func(c *fxelection.Config) { c.Metadata = map[string]string{"k": fmt.Sprintf("%05000d", 0)} }, "fxelection: Metadata: must be at most 4096 bytes of keys and values (is 5001)"},
		{"deadline >= lease", func(c *fxelection.Config) { c.RenewDeadline = 20 * time.Second }, "fxelection: RenewDeadline: must be shorter than LeaseDuration (is 20s, LeaseDuration 15s)"},
		{"deadline == lease", func(c *fxelection.Config) { c.RenewDeadline = 15 * time.Second }, "RenewDeadline: must be shorter than LeaseDuration (is 15s, LeaseDuration 15s)"},
		{"retry too long", func(c *fxelection.Config) { c.RetryPeriod = 9 * time.Second }, "fxelection: RenewDeadline: must be longer than 1.2 × RetryPeriod (is 10s, 1.2 × RetryPeriod 10.8s)"},
		{"negative lease", func(c *fxelection.Config) { c.LeaseDuration = -time.Second }, "fxelection: LeaseDuration: must be positive (is -1s)"},
		{"negative retry", func(c *fxelection.Config) { c.RetryPeriod = -time.Second }, "fxelection: RetryPeriod: must be positive (is -1s)"},
		{"negative stop timeout", func(c *fxelection.Config) { c.StopTimeout = -1 }, "fxelection: StopTimeout: must be positive (is -1ns)"},
		{"backoff below retry", func(c *fxelection.Config) { c.MaxBackoff = time.Second }, "fxelection: MaxBackoff: must not be shorter than RetryPeriod (is 1s, RetryPeriod 2s)"},
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
				return
			}
			if err == nil || !contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tt.wantErr)
			}
			if _, err := fxelection.New(c, memory.New()); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestDefaultIdentityUnique(t *testing.T) {
	a, b := fxelection.DefaultIdentity(), fxelection.DefaultIdentity()
	if a == b || a == "" {
		t.Fatalf("identities %q %q", a, b)
	}
	e, err := fxelection.New(fxelection.Config{Name: "x"}, memory.New())
	if err != nil || e.Status().Identity == "" || e.Config().LeaseDuration != 15*time.Second {
		t.Fatalf("defaults not applied: %v %+v", err, e.Config())
	}
}

// A store that hangs forever must not wedge the elector: Acquire calls are
// bounded by RenewDeadline, Resign's release too, and Stop always returns.
func TestHungStoreDoesNotWedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fa := faultinject.New(memory.New())
		a := start(t, cfg("a"), fa)
		synctest.Wait()
		fa.Hang(true) // renewals, the resign's release and acquisitions hang
		began := time.Now()
		if err := a.Resign(context.Background()); err == nil {
			t.Fatal("Resign on a hung store reported success")
		}
		if took := time.Since(began); took > deadline {
			t.Fatalf("Resign took %v on a hung store, want at most RenewDeadline %v", took, deadline)
		}
		time.Sleep(3 * retry) // campaigning again: its Acquire hangs
		began = time.Now()
		if ok, _ := a.TryAcquire(context.Background()); ok {
			t.Fatal("acquired on a hung store")
		}
		if took := time.Since(began); took > 2*deadline {
			t.Fatalf("TryAcquire took %v on a hung store", took)
		}
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// New copies Config.Metadata and Config hands out a copy: neither the
// caller's later changes nor a reader's reach the leases.
func TestConfigMetadataCopied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		md := map[string]string{"zone": "a"}
		c := cfg("a")
		c.Metadata = md
		e, err := fxelection.New(c, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		md["zone"] = "changed"
		e.Config().Metadata["zone"] = "changed too"
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		l, ok := e.Lease()
		if !ok || l.Metadata["zone"] != "a" {
			t.Fatalf("lease %+v, want the metadata New was given", l)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConfigError: every Config problem comes back from New and
// Config.Validate as a *ConfigError naming the field, with the message
// "fxelection: <Field>: <Reason>".
func TestConfigError(t *testing.T) {
	for field, c := range map[string]fxelection.Config{
		"Name":          {},
		"Identity":      {Name: "a", Identity: "bad\n"},
		"Metadata":      {Name: "a", Metadata: map[string]string{"": "v"}},
		"LeaseDuration": {Name: "a", Timing: fxelection.Timing{LeaseDuration: -1}},
		"RenewDeadline": {Name: "a", Timing: fxelection.Timing{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}},
		"RetryPeriod":   {Name: "a", Timing: fxelection.Timing{RetryPeriod: time.Millisecond}},
		"MaxBackoff":    {Name: "a", Timing: fxelection.Timing{MaxBackoff: time.Second}},
		"StopTimeout":   {Name: "a", StopTimeout: -1},
	} {
		for _, err := range []error{c.Validate(), func() error { _, err := fxelection.New(c, memory.New()); return err }()} {
			var ce *fxelection.ConfigError
			if !errors.As(err, &ce) || ce.Field != field || err.Error() != "fxelection: "+field+": "+ce.Reason {
				t.Errorf("%s: got %v (%#v)", field, err, ce)
			}
		}
	}
}
