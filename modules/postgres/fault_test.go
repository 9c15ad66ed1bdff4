package pglease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// The fault tests stop, kill and restart the package's private server, so
// they never use FXELECTION_TEST_POSTGRES_DSN, and they bring the server
// back up before they end.

// bringBack restarts the private server at cleanup (it may be down).
func bringBack(t *testing.T) {
	srv := server(t)
	t.Cleanup(func() {
		if err := srv.Restart(); err != nil {
			t.Errorf("restart postgres: %v", err)
		}
	})
}

// TestFaultTerminatedConnections kills every connection of the leader's
// pool, several times: the pool reconnects, the leader renews and keeps
// its lease and term, and its listener comes back.
//
// Its verdict (no step-down) must not depend on how fast the machine is:
// after a kill the pool dials, authenticates and re-prepares before the
// next renewal can succeed, and on an oversubscribed machine that took
// longer than the fault timing's 1.3 s renew deadline. So this test runs
// with a renew deadline of 20 s (lease 30 s): a pool that reconnects at
// all renews well within it, while one that never recovers still makes
// the leader step down (or the renewals below never come) and fails it.
func TestFaultTerminatedConnections(t *testing.T) {
	d := server(t).DSN()
	adm := admin(t, d)
	e := election(t)
	const renewDeadline = 20 * time.Second
	timing := func(cfg *fxelection.Config) {
		cfg.LeaseDuration, cfg.RenewDeadline = 30*time.Second, renewDeadline
	}
	start := func(id string) *candidate {
		b, app := newBackend(t, d, id, pglease.Options{})
		return &candidate{electiontesting.StartCandidate(t, b, e, id, timing), app}
	}
	a, b := start("a"), start("b")
	leader := leaderOf(t, 30*time.Second, a, b)
	first, _ := leader.Elector.Lease()
	electiontesting.WaitFor(t, 30*time.Second, "the leader's listener", func() bool { return listeners(t, adm, leader.app) == 1 })

	for round := range 3 {
		var killed int
		if err := adm.QueryRow(ctxT(t), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1`, leader.app).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed < 2 { // at least the listener and one pooled connection
			t.Fatalf("round %d: terminated %d connections, want the listener and the pool's", round, killed)
		}
		renewed := len(leader.Events.Filter(electiontesting.Kind(fxelection.EventRenewed)))
		// Several renewals after the kill (RetryPeriod apart), waited
		// for up to the renew deadline and more.
		electiontesting.WaitFor(t, renewDeadline+10*time.Second, "renewals after the kill", func() bool {
			return len(leader.Events.Filter(electiontesting.Kind(fxelection.EventRenewed))) >= renewed+5
		})
		electiontesting.WaitFor(t, 30*time.Second, "the leader's listener back", func() bool { return listeners(t, adm, leader.app) == 1 })
	}
	if stops := leader.Events.Filter(electiontesting.Kind(fxelection.EventStoppedLeading)); len(stops) != 0 {
		t.Fatalf("leader stepped down after its connections were killed: %+v", stops[0])
	}
	now, ok := leader.Elector.Lease()
	if !ok || now.Term != first.Term {
		t.Fatalf("leader lease now %+v (leading %v), want term %d", now, ok, first.Term)
	}
}

// TestFaultServerDown stops (or kills) the server beyond RenewDeadline: the
// leader steps down with ReasonDeadline and nobody leads. With the server
// down past the lease duration the lease has expired by the server's
// clock when it comes back, so the next leader — either candidate — has a
// strictly higher term.
func TestFaultServerDown(t *testing.T) {
	for _, how := range []string{"Stop", "Kill"} {
		t.Run(how, func(t *testing.T) {
			srv := server(t)
			d := srv.DSN()
			e := election(t)
			a := startCandidate(t, d, e, "a", pglease.Options{})
			b := startCandidate(t, d, e, "b", pglease.Options{})
			leader := leaderOf(t, 15*time.Second, a, b)
			first, _ := leader.Elector.Lease()

			bringBack(t)
			down := time.Now()
			var err error
			if how == "Stop" {
				err = srv.Stop()
			} else {
				err = srv.Kill()
			}
			if err != nil {
				t.Fatal(err)
			}
			electiontesting.WaitFor(t, electiontesting.FaultRenew+5*time.Second, "the leader to step down", func() bool {
				return len(leader.Events.Filter(electiontesting.Kind(fxelection.EventStoppedLeading))) > 0
			})
			stop := leader.Events.Filter(electiontesting.Kind(fxelection.EventStoppedLeading))[0]
			if stop.Reason != fxelection.ReasonDeadline {
				t.Fatalf("stepped down with reason %q, want %q", stop.Reason, fxelection.ReasonDeadline)
			}
			if took := stop.Time.Sub(down); took > electiontesting.FaultRenew+3*time.Second {
				t.Errorf("stepped down %v after the server went down, renew deadline %v", took, electiontesting.FaultRenew)
			}
			if a.Elector.IsLeader() || b.Elector.IsLeader() {
				t.Fatal("a candidate leads while the server is down")
			}
			// The step-down comes at the renew deadline even while a
			// renewal is in flight; its failure is reported when the call
			// returns, which may be after.
			electiontesting.WaitFor(t, electiontesting.FaultRenew+5*time.Second, "a failed renewal event", func() bool {
				return len(leader.Events.Filter(func(ev fxelection.Event) bool {
					return ev.Kind == fxelection.EventOperation && ev.Op == backendkit.OpRenew && ev.Err != nil
				})) > 0
			})
			// Past the lease by a margin, then back.
			time.Sleep(time.Until(down.Add(electiontesting.FaultLease + 500*time.Millisecond)))
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			next := leaderOf(t, 4*electiontesting.FaultMaxBackoff+15*time.Second, a, b)
			second, _ := next.Elector.Lease()
			if second.Term <= first.Term {
				t.Fatalf("term after the outage %d (holder %s), want > %d (holder %s)", second.Term, second.Holder, first.Term, first.Holder)
			}
		})
	}
}

// TestFaultQuickRestart restarts the server mid-leadership. Afterwards
// exactly one candidate leads. The term rule: it changes only when a lease
// starts anew, so the next leader either is the same holder still on its
// unexpired lease (same term), or has a higher term.
func TestFaultQuickRestart(t *testing.T) {
	srv := server(t)
	d := srv.DSN()
	e := election(t)
	a := startCandidate(t, d, e, "a", pglease.Options{})
	b := startCandidate(t, d, e, "b", pglease.Options{})
	leader := leaderOf(t, 15*time.Second, a, b)
	first, _ := leader.Elector.Lease()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Let a renewal or acquisition go through on the restarted server.
	time.Sleep(2 * electiontesting.FaultRetry)
	next := leaderOf(t, 4*electiontesting.FaultMaxBackoff+15*time.Second, a, b)
	second, _ := next.Elector.Lease()
	if !(second.Term > first.Term || (second.Holder == first.Holder && second.Term == first.Term)) {
		t.Fatalf("after restart: holder %s term %d; before: holder %s term %d", second.Holder, second.Term, first.Holder, first.Term)
	}
	t.Logf("after restart: holder %s term %d (before: %s term %d; leader stepped down %d times)",
		second.Holder, second.Term, first.Holder, first.Term, len(leader.Events.Filter(electiontesting.Kind(fxelection.EventStoppedLeading))))
}

// TestFaultServerDownAtStart starts an elector while the server is down:
// it reports store errors with growing waits between attempts, and leads
// once the server is up.
func TestFaultServerDownAtStart(t *testing.T) {
	srv := server(t)
	d := srv.DSN()
	bringBack(t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	e := election(t)
	c := startCandidate(t, d, e, "a", pglease.Options{})
	failed := func() []fxelection.Event {
		return c.Events.Filter(func(ev fxelection.Event) bool {
			return ev.Kind == fxelection.EventOperation && ev.Op == backendkit.OpAcquire && ev.Err != nil
		})
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "four failed attempts", func() bool { return len(failed()) >= 4 })
	evs := failed()
	for _, ev := range evs {
		if errors.Is(ev.Err, backendkit.ErrLeaseHeld) || errors.Is(ev.Err, backendkit.ErrInvalidRecord) {
			t.Fatalf("failure while the server is down: %v, want a store error", ev.Err)
		}
	}
	var longest time.Duration
	for i := 1; i < len(evs); i++ {
		longest = max(longest, evs[i].Time.Sub(evs[i-1].Time))
	}
	// Without backoff every wait would be at most 1.2 RetryPeriods.
	if longest < 2*electiontesting.FaultRetry {
		t.Errorf("longest wait between failed attempts %v, want backoff beyond %v", longest, 2*electiontesting.FaultRetry)
	}
	if st := c.Elector.Status(); st.LastError == nil {
		t.Error("Status has no LastError")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	leaderOf(t, 2*electiontesting.FaultMaxBackoff+15*time.Second, c)
}

// TestFaultRowEditedOutside changes the holder behind the leader's back:
// the leader loses at its next renewal (ReasonLost), not at the deadline.
func TestFaultRowEditedOutside(t *testing.T) {
	d := server(t).DSN()
	adm := admin(t, d)
	e := election(t)
	c := startCandidate(t, d, e, "a", pglease.Options{})
	leaderOf(t, 15*time.Second, c)
	tag, err := adm.Exec(ctxT(t), `UPDATE fxelection_leases SET holder = 'intruder' WHERE name = $1`, e)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("update: %v, %v", tag, err)
	}
	edited := time.Now()
	electiontesting.WaitFor(t, electiontesting.FaultRenew+5*time.Second, "the leader to step down", func() bool {
		return len(c.Events.Filter(electiontesting.Kind(fxelection.EventStoppedLeading))) > 0
	})
	stop := c.Events.Filter(electiontesting.Kind(fxelection.EventStoppedLeading))[0]
	if stop.Reason != fxelection.ReasonLost {
		t.Fatalf("stepped down with reason %q after %v, want %q", stop.Reason, stop.Time.Sub(edited), fxelection.ReasonLost)
	}
	if l, ok := c.Elector.Leader(); ok && l.Holder == "a" {
		t.Fatalf("still sees itself as leader: %+v", l)
	}
}
