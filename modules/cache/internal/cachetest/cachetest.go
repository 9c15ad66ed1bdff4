// Package cachetest holds the fault scenarios every cache adapter runs
// against its real server (server killed and restarted empty, flush, key
// deleted, foreign value, server down at start), so the adapters share one
// copy of them.
package cachetest

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
)

// Server is the part of a testserver the scenarios drive.
type Server interface {
	Stop() error
	Kill() error
	Restart() error
}

// Hooks adapt the scenarios to one adapter and its server.
type Hooks struct {
	// NewBackend returns a Backend with a client of its own.
	NewBackend func(t *testing.T) fxelection.Backend
	// Server is the running test server.
	Server Server
	// Empty, if set, is called between Kill and Restart so that the server
	// restarts without its data (memcached always does).
	Empty func(t *testing.T)
	// Flush drops every key from outside (flush_all, bucket purge).
	Flush func(t *testing.T)
	// Delete deletes election's key from outside.
	Delete func(t *testing.T, election string)
	// PutForeign writes a value that is not a lease record under
	// election's key, expiring after ttl where the store can.
	PutForeign func(t *testing.T, election string, ttl time.Duration)
	// ForeignExpires says a foreign value expires by itself (store TTL);
	// otherwise the scenario deletes it.
	ForeignExpires bool
	// Slack is added to the time a takeover may take after expiry (whole-
	// second TTL rounding). Default 0.
	Slack time.Duration
}

// RunFaults runs every fault scenario, with electiontest's fault timing.
func RunFaults(t *testing.T, h Hooks) {
	t.Run("KilledRestartedEmpty", h.killedRestartedEmpty)
	t.Run("Flush", h.flush)
	t.Run("KeyDeleted", h.keyDeleted)
	t.Run("ForeignValue", h.foreign)
	t.Run("ServerDownAtStart", h.downAtStart)
}

func (h Hooks) two(t *testing.T, election string) []*electiontest.Candidate {
	return []*electiontest.Candidate{
		electiontest.StartCandidate(t, h.NewBackend(t), election, "c1", nil),
		electiontest.StartCandidate(t, h.NewBackend(t), election, "c2", nil),
	}
}

func (h Hooks) takeoverLimit() time.Duration {
	return electiontest.LeaderLimit + electiontest.FaultLease + h.Slack
}

// killedRestartedEmpty: the server is killed mid-leadership. The leader
// steps down within RenewDeadline (its renewals fail); after a restart
// without data a leader is elected again with a term above every earlier
// one.
func (h Hooks) killedRestartedEmpty(t *testing.T) {
	e := electiontest.Election(t)
	cs := h.two(t, e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	killed := time.Now()
	if err := h.Server.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if took := ev.Time.Sub(killed); took > electiontest.FaultRenew+2*time.Second {
		t.Errorf("stepped down %v after the kill, want within RenewDeadline %v (+2s slack)", took, electiontest.FaultRenew)
	}
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	if _, ok := leader.Events.Find(func(ev fxelection.Event) bool {
		return electiontest.IsStoreFailure(ev) && ev.Op == fxelection.OpRenew
	}); !ok {
		t.Error("no failed renewal was observed")
	}
	if h.Empty != nil {
		h.Empty(t)
	}
	if err := h.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, h.takeoverLimit())
	t.Logf("stepped down %v after the kill; term %d → %d after an empty restart", ev.Time.Sub(killed), first.Term, second.Term)
}

// flush: every key dropped from outside. The leader steps down at its next
// renewal (lease lost); the next leader's term is still higher.
func (h Hooks) flush(t *testing.T) {
	e := electiontest.Election(t)
	cs := h.two(t, e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	h.Flush(t)
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, electiontest.LeaderLimit)
	t.Logf("term %d → %d after the flush", first.Term, second.Term)
}

// keyDeleted: the lease key deleted from outside, as flush but for one key.
func (h Hooks) keyDeleted(t *testing.T) {
	e := electiontest.Election(t)
	cs := h.two(t, e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	h.Delete(t, e)
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, electiontest.LeaderLimit)
	t.Logf("term %d → %d after the delete", first.Term, second.Term)
}

// foreign: a foreign value overwrites a held lease. The leader steps down
// (lease lost), candidates report invalid-record errors and nobody takes
// the foreign value over while it lasts; once it expires (or is deleted) a
// leader is elected with a higher term. Nothing panics.
func (h Hooks) foreign(t *testing.T) {
	e := electiontest.Election(t)
	cs := h.two(t, e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	const ttl = 4 * time.Second
	written := time.Now()
	h.PutForeign(t, e, ttl)
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	electiontest.WaitFor(t, 10*time.Second, "an invalid-record error event", func() bool {
		for _, c := range cs {
			if _, ok := c.Events.Find(func(ev fxelection.Event) bool {
				return errors.Is(ev.Err, fxelection.ErrInvalidRecord)
			}); ok {
				return true
			}
		}
		return false
	})
	// Nobody leads while the foreign value is there.
	for time.Since(written) < ttl-500*time.Millisecond {
		for _, c := range cs {
			if l, ok := c.Elector.Lease(); ok && l.Term > first.Term {
				t.Fatalf("%s took over a foreign value after %v (it lasts %v)", l.Holder, time.Since(written), ttl)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !h.ForeignExpires {
		h.Delete(t, e)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, h.takeoverLimit())
	t.Logf("term %d → %d after the foreign value went away", first.Term, second.Term)
}

// downAtStart: candidates start while the server is down. They report store
// failures; once the server is up a leader is elected.
func (h Hooks) downAtStart(t *testing.T) {
	if err := h.Server.Stop(); err != nil {
		t.Fatal(err)
	}
	e := electiontest.Election(t)
	c := electiontest.StartCandidate(t, h.NewBackend(t), e, "c1", nil)
	electiontest.WaitFor(t, 30*time.Second, "three failed acquisitions", func() bool {
		n := 0
		for _, ev := range c.Events.All() {
			if electiontest.IsStoreFailure(ev) && ev.Op == fxelection.OpAcquire {
				n++
			}
		}
		return n >= 3
	})
	if c.Elector.Status().LastError == nil {
		t.Error("Status has no LastError")
	}
	if _, ok := c.Elector.Lease(); ok {
		t.Fatal("leads while the server is down")
	}
	if err := h.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	electiontest.WaitLeader(t, []*electiontest.Candidate{c}, electiontest.FaultMaxBackoff*2+electiontest.LeaderLimit)
}
