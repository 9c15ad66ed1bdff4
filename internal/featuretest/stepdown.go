package featuretest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// signalTimes records the first time of each step-down signal.
type signalTimes struct {
	mu                         sync.Mutex
	cancelled, stopped, logged time.Time
}

func (st *signalTimes) set(p *time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if p.IsZero() {
		*p = time.Now()
	}
}

func (st *signalTimes) get() (cancelled, stopped, logged time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cancelled, st.stopped, st.logged
}

// lostHandler is a slog.Handler that records the first "leadership lost".
type lostHandler struct{ st *signalTimes }

func (h lostHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h lostHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lostHandler) WithGroup(string) slog.Handler            { return h }
func (h lostHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "leadership lost" {
		h.st.set(&h.st.logged)
	}
	return nil
}

// stepDownHang: a leader whose renewal hangs in the backend, ignoring its
// context (faultinject.Backend.Wedge, as an SDK without ctx support or a
// blocked read), still steps down on time: the leader context is
// cancelled, OnStoppedLeading is called and "leadership lost" is logged
// within RenewDeadline of the start of its last successful renewal, with
// and without batched renewals (faultinject.BatchBackend hands batches to
// the backend's own RenewBatch where it has one).
//
// The exact bound is checked on fake time in package fxelection; real
// servers on an oversubscribed machine need a margin, kept under fake time
// too: max(RenewDeadline/2, 1s). With the default timing that equals
// LeaseDuration−RenewDeadline, the safety margin itself, so this case
// proves that the backend cannot hold the step-down hostage (the wedged
// call never returns while it checks), not the tightness of the bound.
func (s *env) stepDownHang(t *testing.T, batched bool) {
	tm := s.o.Timing
	var (
		f *faultinject.Backend
		b fxelection.Backend
	)
	if batched {
		bf := faultinject.NewBatch(s.newBackend(t))
		f, b = bf.Backend, bf
	} else {
		f = faultinject.New(s.newBackend(t))
		b = f
	}
	st := &signalTimes{}
	var startOnce sync.Once
	c := fxelection.Config{
		Name:     electiontesting.Election(t),
		Identity: "hang-1",
		Timing: fxelection.Timing{
			LeaseDuration: tm.LeaseDuration,
			RenewDeadline: tm.RenewDeadline,
			RetryPeriod:   tm.RetryPeriod,
			MaxBackoff:    4 * tm.RetryPeriod,
		},
		Logger: slog.New(lostHandler{st}),
	}
	c.Callbacks.OnStartedLeading = func(ctx context.Context) {
		first := false
		startOnce.Do(func() { first = true })
		if !first {
			return // a later leadership (the batched elector is not stuck)
		}
		<-ctx.Done()
		st.set(&st.cancelled)
	}
	c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) { st.set(&st.stopped) }
	// In a group of its own: batched renewals when b batches.
	g, err := fxelection.NewGroup(b)
	if err != nil {
		t.Fatalf("NewGroup: %v", err)
	}
	e, err := g.New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	renewed := make(chan struct{}, 64)
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if ev.Kind == fxelection.EventRenewed {
			select {
			case renewed <- struct{}{}:
			default:
			}
		}
	}))
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	t.Cleanup(func() { f.Wedge(backendkit.OpRenew, false) }) // before Stop

	// Two successful renewals, then every renewal hangs.
	limit := time.After(10 * tm.LeaseDuration)
	for range 2 {
		select {
		case <-renewed:
		case <-limit:
			t.Fatalf("no two renewals within %v", 10*tm.LeaseDuration)
		}
	}
	first := e.Status()
	if !first.Leading {
		t.Fatal("renewed but not leading")
	}
	term := first.Lease.Term
	f.Wedge(backendkit.OpRenew, true)

	// The last successful renewal may be one in flight as Renew was
	// wedged: follow LastRenew while this leadership lasts.
	margin := max(tm.RenewDeadline/2, time.Second)
	last := first.LastRenew
	giveUp := time.Now().Add(tm.RenewDeadline + margin + tm.LeaseDuration)
	for {
		if s := e.Status(); s.Leading && s.Lease.Term == term && s.LastRenew.After(last) {
			last = s.LastRenew
		}
		cancelled, stopped, logged := st.get()
		if !cancelled.IsZero() && !stopped.IsZero() && !logged.IsZero() || time.Now().After(giveUp) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	bound := last.Add(tm.RenewDeadline + margin)
	cancelled, stopped, logged := st.get()
	for _, sig := range []struct {
		what string
		at   time.Time
	}{{"leader context cancelled", cancelled}, {"OnStoppedLeading called", stopped}, {`"leadership lost" logged`, logged}} {
		switch {
		case sig.at.IsZero():
			t.Errorf("%s: not within %v of the last successful renewal's start while Renew hung", sig.what, giveUp.Sub(last))
		case sig.at.After(bound):
			t.Errorf("%s %v after the last successful renewal's start; want at most RenewDeadline (%v) + %v",
				sig.what, sig.at.Sub(last), tm.RenewDeadline, margin)
		}
	}
}
