package schedule_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/schedule"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, b fxelection.Backend, id string) *fxelection.Elector {
	t.Helper()
	e, err := fxelection.New(fxelection.Config{
		Name: "jobs", Identity: id,
		Timing: fxelection.Timing{
			LeaseDuration: 2 * time.Second,
			RenewDeadline: 1300 * time.Millisecond,
			RetryPeriod:   100 * time.Millisecond,
		},
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a wait, not a budget: it ends when cond holds
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestElectorAdapter(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	stopped, err := fxelection.New(fxelection.Config{Name: "jobs", Identity: "idle"}, b)
	if err != nil {
		t.Fatal(err)
	}
	var nle *schedule.NotLeaderError
	if err := schedule.NewElector(stopped).IsLeader(ctx); !errors.As(err, &nle) || nle.LeaderKnown || !errors.Is(err, schedule.ErrNotLeader) {
		t.Fatalf("unstarted: %v", err)
	}

	a := start(t, b, "a")
	waitFor(t, "a leads", a.IsLeader)
	bb := start(t, b, "b")
	waitFor(t, "b sees a", func() bool { _, ok := bb.Leader(); return ok })

	if err := schedule.NewElector(a).IsLeader(ctx); err != nil {
		t.Fatalf("leader: %v", err)
	}
	err = schedule.NewElector(bb).IsLeader(ctx)
	if !errors.As(err, &nle) || !nle.LeaderKnown || nle.Leader.Holder != "a" || nle.Identity != "b" {
		t.Fatalf("follower: %v", err)
	}
	if lease, _ := a.Lease(); nle.Leader.Term != lease.Term || !strings.Contains(err.Error(), `leader "a"`) {
		t.Fatalf("follower error %q, leader term %d", err, lease.Term)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := schedule.NewElector(a).IsLeader(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestTask(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	a := start(t, b, "a")
	waitFor(t, "a leads", a.IsLeader)
	f := start(t, b, "f")

	var runs atomic.Int32
	body := func(ctx context.Context) error {
		runs.Add(1)
		tok, err := fence.FromContext(ctx)
		if err != nil || tok.Election != "jobs" {
			t.Errorf("job context token: %v %v", tok, err)
		}
		return nil
	}
	if err := schedule.Task(f, body)(ctx); err != nil || runs.Load() != 0 {
		t.Fatalf("follower ran the job: %v, runs %d", err, runs.Load())
	}
	if err := schedule.Task(a, body)(ctx); err != nil || runs.Load() != 1 {
		t.Fatalf("leader: %v, runs %d", err, runs.Load())
	}
	boom := errors.New("boom")
	if err := schedule.Task(a, func(context.Context) error { return boom })(ctx); !errors.Is(err, boom) {
		t.Fatalf("job error: %v", err)
	}

	// A long job is cancelled when leadership ends, and Resign waits for it.
	started, ended := make(chan struct{}), make(chan struct{})
	go func() {
		_ = schedule.Task(a, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			close(ended)
			return ctx.Err()
		})(ctx)
	}()
	<-started
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Resign returned before the job did")
	}
	waitFor(t, "f leads", f.IsLeader)
}
