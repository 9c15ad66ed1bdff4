package fxelection_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// healthFlag is a Health.Check whose answer a test switches.
type healthFlag struct{ bad atomic.Bool }

func (h *healthFlag) check(context.Context) error {
	if h.bad.Load() {
		return errors.New("database unreachable")
	}
	return nil
}

func healthCfg(id string, h *healthFlag) fxelection.Config {
	c := cfg(id)
	c.Health.Check = h.check
	c.Health.Interval = 100 * time.Millisecond
	return c
}

// TestHealthUnhealthyNeverLeads: a candidate whose check fails makes no
// attempt: it never leads, TryAcquire reports false, and Status says why,
// while a healthy candidate leads.
func TestHealthUnhealthyNeverLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		sick := &healthFlag{}
		sick.bad.Store(true)
		a := start(t, healthCfg("a", sick), store)
		for range 10 * 1000 / 100 { // ten seconds, 100 ms apart
			if a.IsLeader() {
				t.Fatal("a leads with a failing Health.Check")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if ok, err := a.TryAcquire(context.Background()); ok || err != nil {
			t.Fatalf("TryAcquire while unhealthy = %v, %v; want false, nil", ok, err)
		}
		if s := a.Status(); s.Healthy || s.HealthError == nil {
			t.Fatalf("Status: Healthy %v, HealthError %v; want false and the check's error", s.Healthy, s.HealthError)
		}
		if _, err := store.Get(context.Background(), "jobs"); err == nil {
			t.Fatal("the unhealthy candidate wrote a lease")
		}
		b := start(t, healthCfg("b", &healthFlag{}), store)
		waitFor(t, "b leads", b.IsLeader)
		// Healthy again: a campaigns again (and follows b).
		sick.bad.Store(false)
		waitFor(t, "a healthy", func() bool { return a.Status().Healthy })
		waitFor(t, "a knows b leads", func() bool { l, ok := a.Leader(); return ok && l.Holder == "b" })
	})
}

// TestHealthLeaderResigns: a leader whose checks start failing resigns
// (ReasonUnhealthy) within (Health.Threshold + 1) × Health.Interval, and a
// healthy follower, woken by the release, leads at once.
func TestHealthLeaderResigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		h := &healthFlag{}
		var reason atomic.Value
		ca := healthCfg("a", h)
		ca.Callbacks.OnStoppedLeading = func(_ fxelection.Lease, r fxelection.StopReason) { reason.Store(r) }
		a := start(t, ca, store)
		waitFor(t, "a leads", a.IsLeader)
		b := start(t, healthCfg("b", &healthFlag{}), store)
		time.Sleep(5 * retry)
		if !a.IsLeader() || b.IsLeader() {
			t.Fatal("a should lead, b follow")
		}
		failed := time.Now()
		h.bad.Store(true)
		waitFor(t, "a steps down", func() bool { return !a.IsLeader() })
		if took, bound := time.Since(failed), 4*ca.Health.Interval; took > bound {
			t.Errorf("a stepped down %v after its checks began failing, want within (3 + 1) × Health.Interval = %v", took, bound)
		}
		waitFor(t, "b leads", b.IsLeader)
		if took := time.Since(failed); took > 4*ca.Health.Interval+10*time.Millisecond {
			t.Errorf("b led %v after a's checks began failing; the release should wake it at once", took)
		}
		waitFor(t, "OnStoppedLeading", func() bool { return reason.Load() != nil })
		if r := reason.Load(); r != fxelection.ReasonUnhealthy {
			t.Errorf("reason %v, want %v", r, fxelection.ReasonUnhealthy)
		}
		time.Sleep(5 * retry)
		if a.IsLeader() {
			t.Error("a leads again while unhealthy")
		}
	})
}

// TestHealthStopBounded: a Health.Check that ignores its context does not
// hold Stop past its bound; Stop names it.
func TestHealthStopBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c := cfg("a")
		c.StopTimeout = time.Second
		c.Health.Check = func(context.Context) error { <-release; return nil }
		e, err := fxelection.New(c, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(retry)
		begin := time.Now()
		err = e.Stop(context.Background())
		if err == nil || !contains(err.Error(), "Health.Check still running") {
			t.Fatalf("Stop = %v, want an error naming Health.Check", err)
		}
		if took := time.Since(begin); took > c.StopTimeout+c.RetryPeriod+time.Second {
			t.Fatalf("Stop took %v", took)
		}
		close(release)
		synctest.Wait()
	})
}

// TestHealthConfig: Health.Interval and Health.Threshold defaults and bounds.
func TestHealthConfig(t *testing.T) {
	c := cfg("a")
	c.Health.Check = func(context.Context) error { return nil }
	e, err := fxelection.New(c, memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Config(); got.Health.Interval != retry || got.Health.Threshold != 3 {
		t.Fatalf("defaults: Health.Interval %v, Health.Threshold %d; want %v and 3", got.Health.Interval, got.Health.Threshold, retry)
	}
	for _, bad := range []func(*fxelection.Config){
		func(c *fxelection.Config) { c.Health.Interval = time.Millisecond },
		func(c *fxelection.Config) { c.Health.Interval = -time.Second },
		func(c *fxelection.Config) { c.Health.Threshold = -1 },
	} {
		c := cfg("a")
		bad(&c)
		var ce *fxelection.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || !contains(ce.Field, "Health") {
			t.Errorf("Validate = %v, want a ConfigError naming a Health field", err)
		}
	}
}

// waitFor polls cond every millisecond of fake time, for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
	}
}
