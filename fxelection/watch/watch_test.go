package watch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/watch"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

func startElector(t *testing.T, b fxelection.Backend, id string) *fxelection.Elector {
	t.Helper()
	e, err := fxelection.New(fxelection.Config{
		Name: "watched", Identity: id, Metadata: map[string]string{"addr": id + ":8080"},
		Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestWatcherFollowsLeader runs on fake time: the watcher reports the
// first leader, a graceful hand-over within milliseconds (push wake-up),
// and a takeover after a cut within the poll bound after it happened.
func TestWatcherFollowsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		changes := &electiontesting.ChangeLog{}
		const poll = time.Second
		w, err := watch.New(watch.Config{Name: "watched", PollInterval: poll, OnChange: changes.Add}, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if info, ok := w.Leader(); !ok || info.HasLeader {
			t.Fatalf("before any candidate: %+v %v", info, ok)
		}

		a := startElector(t, mem, "a")
		time.Sleep(10 * time.Millisecond)
		b := startElector(t, mem, "b")
		time.Sleep(2 * poll)
		info, _ := w.Leader()
		if info.Leader.Holder != "a" || info.Leader.Metadata["addr"] != "a:8080" {
			t.Fatalf("first leader: %+v", info)
		}
		termA := info.Leader.Term

		// Graceful hand-over: pushed, seen within milliseconds.
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		resigned := time.Now()
		for {
			info, _ = w.Leader()
			if info.Leader.Holder == "b" {
				break
			}
			if time.Since(resigned) > 200*time.Millisecond {
				t.Fatalf("hand-over not seen within 200ms: %+v", info)
			}
			time.Sleep(time.Millisecond)
		}
		if info.Leader.Term <= termA {
			t.Fatalf("term did not increase: %d after %d", info.Leader.Term, termA)
		}

		// b stops and releases; a takes over (pushed as well).
		if err := b.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		for !a.IsLeader() {
			time.Sleep(time.Millisecond)
		}
		led := time.Now()
		for {
			info, _ = w.Leader()
			if info.Leader.Holder == "a" {
				break
			}
			if time.Since(led) > poll*6/5 {
				t.Fatalf("new leader not seen within the poll bound: %+v", info)
			}
			time.Sleep(time.Millisecond)
		}
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * poll)
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if got := changes.Holders(); got != "- a - b - a -" && got != "- a b - a -" && got != "- a b a -" && got != "- a - b a -" {
			t.Fatalf("changes seen: %q", got)
		}
		t.Logf("changes seen: %q", changes.Holders())
	})
}

// TestWatcherTakeoverAfterCut: a takeover after a cut is seen within the
// poll bound after the new leader acquired (fake time).
func TestWatcherTakeoverAfterCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		const poll = 700 * time.Millisecond
		w, err := watch.New(watch.Config{Name: "watched", PollInterval: poll}, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Stop(ctx) }()
		fa := faultinject.New(mem)
		a := startElector(t, fa, "a")
		defer func() { _ = a.Stop(ctx) }()
		time.Sleep(10 * time.Millisecond)
		b := startElector(t, mem, "b")
		defer func() { _ = b.Stop(ctx) }()
		time.Sleep(2 * poll)
		if info, _ := w.Leader(); info.Leader.Holder != "a" {
			t.Fatalf("first leader: %+v", info)
		}
		fa.Partition(true)
		for !b.IsLeader() {
			time.Sleep(time.Millisecond)
		}
		led := time.Now()
		for {
			info, _ := w.Leader()
			if info.Leader.Holder == "b" {
				break
			}
			if time.Since(led) > poll*6/5 {
				t.Fatalf("takeover not seen within the poll bound: %+v", info)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

func TestWatcherConfig(t *testing.T) {
	mem := memory.New()
	for name, cfg := range map[string]watch.Config{
		"Name":         {},
		"PollInterval": {Name: "x", PollInterval: -1},
		"MaxBackoff":   {Name: "x", MaxBackoff: -1},
		"Timeout":      {Name: "x", Timeout: -time.Second},
	} {
		if _, err := watch.New(cfg, mem); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := watch.New(watch.Config{Name: "bad\x1b"}, mem); err == nil {
		t.Error("unprintable name accepted")
	}
	// '#' names the library's own records ("X#preempt" is election X's
	// preemption request): not an election a user can name.
	if _, err := watch.New(watch.Config{Name: "X#preempt"}, mem); err == nil ||
		!strings.Contains(err.Error(), "Name: must not contain '#'") || strings.Contains(err.Error(), "X#preempt") {
		t.Errorf("a name with '#': %v, want refused naming the field, never quoting the name", err)
	}
	if _, err := watch.New(watch.Config{Name: "x"}, nil); err == nil {
		t.Error("nil backend accepted")
	}
}

func TestWatcherSubscribeAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		w, err := watch.New(watch.Config{Name: "watched", PollInterval: 100 * time.Millisecond,
			OnChange: func(watch.LeaderInfo) { panic("boom") }}, mem) // recovered
		if err != nil {
			t.Fatal(err)
		}
		ch, cancel := w.Subscribe()
		if err := w.Start(ctx); err != nil || w.Start(ctx) != nil {
			t.Fatal(err)
		}
		if info := <-ch; info.HasLeader {
			t.Fatalf("first state: %+v", info)
		}
		a := startElector(t, mem, "a")
		time.Sleep(time.Second)
		// Latest wins: a slow receiver gets the newest state.
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if info := <-ch; info.HasLeader {
			t.Fatalf("latest state should be 'no leader': %+v", info)
		}
		select {
		case info := <-ch:
			t.Fatalf("unexpected extra state %+v", info)
		default:
		}
		late, cancelLate := w.Subscribe()
		if info := <-late; info.HasLeader {
			t.Fatalf("late subscriber's first state: %+v", info)
		}
		cancelLate()
		if _, ok := <-late; ok {
			t.Fatal("cancel did not close the channel")
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := <-ch; ok {
			t.Fatal("Stop did not close the channel")
		}
		cancel()
		if err := w.Start(ctx); !errors.Is(err, fxelection.ErrStopped) {
			t.Fatalf("Start after Stop: %v", err)
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWatcherStoreFailure: while the store fails the last answer is kept
// and LastError says why; it clears once the store answers again.
func TestWatcherStoreFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		f := faultinject.New(mem)
		a := startElector(t, mem, "a")
		defer func() { _ = a.Stop(ctx) }()
		w, err := watch.New(watch.Config{Name: "watched", PollInterval: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Stop(ctx) }()
		time.Sleep(500 * time.Millisecond)
		f.Partition(true)
		time.Sleep(time.Second)
		info, ok := w.Leader()
		if !ok || info.Leader.Holder != "a" || !errors.Is(w.LastError(), faultinject.ErrInjected) {
			t.Fatalf("during failure: %+v %v %v", info, ok, w.LastError())
		}
		var oe *fxelection.OpError
		if !errors.As(w.LastError(), &oe) || oe.Op != backendkit.OpGet {
			t.Fatalf("LastError %v", w.LastError())
		}
		f.Partition(false)
		time.Sleep(time.Second)
		if w.LastError() != nil {
			t.Fatalf("after recovery: %v", w.LastError())
		}
		if info2, _ := w.Leader(); !info2.ObservedAt.After(info.ObservedAt) {
			t.Fatal("ObservedAt did not move on")
		}
	})
}

func TestWatcherModule(t *testing.T) {
	var w *watch.Watcher
	app := fx.New(fx.NopLogger,
		memory.Module,
		fx.Supply(watch.Config{Name: "watched", PollInterval: 50 * time.Millisecond}),
		watch.Module,
		fx.Populate(&w),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a wait, not a budget: it ends at the first read
	for {
		if _, ok := w.Leader(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher never read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestWatcherStopBounded: Stop returns by its context's deadline even while
// OnChange blocks, and the goroutine ends once OnChange returns.
func TestWatcherStopBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		w, err := watch.New(watch.Config{Name: "watched", PollInterval: 100 * time.Millisecond,
			OnChange: func(watch.LeaderInfo) {
				entered <- struct{}{}
				<-release
			}}, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-entered
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := w.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop with a blocked OnChange: %v", err)
		}
		close(release)
		synctest.Wait()
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
