package fxelection_test

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/backoff"
)

// TestHandOverToAbsentWithPriorities: the bound ResignTo and the README
// state for a successor that never comes. The leader, of the highest
// priority, hands over to an absent candidate and stops (a drain); the
// follower, which saw that priority lead, finds the hint for LeaseDuration
// and then the lease free, and waits out its grace: it leads after more
// than LeaseDuration and a poll, within LeaseDuration + PriorityGrace and
// a poll. On fake time.
func TestHandOverToAbsentWithPriorities(t *testing.T) {
	synctestRun(t, func(t *testing.T) {
		store := memory.New()
		cfg := func(id string, prio int) fxelection.Config {
			return fxelection.Config{Name: "drain", Identity: id, Candidacy: fxelection.Candidacy{Priority: prio, PriorityGrace: 2 * time.Second},
				Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}
		}
		start := func(c fxelection.Config) *fxelection.Elector {
			e, err := fxelection.New(c, store)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Stop(context.Background()) })
			return e
		}
		waitFor := func(what string, cond func() bool) {
			t.Helper()
			for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no %s within a minute", what)
				}
			}
		}
		high := start(cfg("high", 2))
		waitFor("leader", high.IsLeader)
		led := make(chan time.Time, 1)
		lowCfg := cfg("low", 1)
		lowCfg.Callbacks.OnStartedLeading = func(context.Context) { led <- time.Now() }
		low := start(lowCfg)
		waitFor("leader seen by the lower priority", func() bool {
			l, ok := low.Leader()
			return ok && l.Holder == "high"
		})
		asked := time.Now()
		if err := high.ResignTo(context.Background(), "absent"); err != nil {
			t.Fatal(err)
		}
		if err := high.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		var took time.Duration
		select {
		case at := <-led:
			took = at.Sub(asked)
		case <-time.After(time.Minute):
			t.Fatal("no leader within a minute of the hand-over")
		}
		c := low.Config()
		poll := backoff.JitterMax(c.RetryPeriod)
		if took <= c.LeaseDuration+poll || took > c.LeaseDuration+c.Candidacy.PriorityGrace+poll {
			t.Fatalf("led %v after the hand-over to an absent candidate; want above LeaseDuration + a poll (%v), within LeaseDuration + PriorityGrace + a poll (%v)",
				took, c.LeaseDuration+poll, c.LeaseDuration+c.Candidacy.PriorityGrace+poll)
		}
		t.Logf("led %v after the hand-over (LeaseDuration %v, PriorityGrace %v)", took, c.LeaseDuration, c.Candidacy.PriorityGrace)
	})
}
