package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// FaultServer is the part of a test server the fault scenarios drive: a
// real store's process on a fixed address (the servers of
// internal/testserver implement it).
type FaultServer interface {
	electiontest.ChaosServer // Kill and Restart
	// Stop stops the server gracefully and waits until it is gone.
	Stop() error
}

// FaultHooks adapt RunFaultTests to one backend and its store's server.
// NewBackend and Server are required; a scenario whose hook is nil is
// skipped.
type FaultHooks struct {
	// NewBackend returns a Backend with a client of its own.
	NewBackend func(t *testing.T) fxelection.Backend
	// Server is the running server of the store NewBackend's backends use.
	Server FaultServer
	// Empty, if set, is called between Kill and Restart so that the server
	// restarts without its data (a server that keeps nothing on disk
	// always does).
	Empty func(t *testing.T)
	// Flush drops every key from outside (FLUSHALL, flush_all, a bucket
	// purge).
	Flush func(t *testing.T)
	// Delete deletes election's lease record from outside.
	Delete func(t *testing.T, election string)
	// PutForeign overwrites election's lease record with a value that is
	// not a lease record, expiring after ttl where the store can.
	PutForeign func(t *testing.T, election string, ttl time.Duration)
	// ForeignExpires says a foreign value expires by itself (store TTL);
	// otherwise the scenario deletes it.
	ForeignExpires bool
	// Slack is added to the time a takeover may take after expiry (whole-
	// second TTL rounding). Default 0.
	Slack time.Duration
}

// RunFaultTests runs fault scenarios against a real store with electors
// on a short timing (a 2s lease, whole seconds for stores whose TTLs are;
// renewed within 1.3s; retried every 300ms, backing off to at most 1.2s),
// each its own subtest:
//
//   - KilledRestartedEmpty: the server is killed under a leader, which
//     steps down within its renew deadline after failed renewals; after a
//     restart (empty, with Empty) a leader is elected with a higher term.
//   - Flush (with Flush) and KeyDeleted (with Delete): the leader loses
//     its lease at its next renewal; the next leader's term is higher.
//   - ForeignValue (with PutForeign): a foreign value over a held lease;
//     the leader steps down, candidates report ErrInvalidRecord, nobody
//     takes the value over while it lasts, then a leader is elected with a
//     higher term.
//   - ServerDownAtStart: a candidate started while the server is down
//     reports store failures through events, OnError and Status, backing
//     off exponentially, and leads once the server is up.
//
// The scenarios stop, kill and restart the server: give them one of their
// own.
func RunFaultTests(t *testing.T, h FaultHooks) {
	t.Run("KilledRestartedEmpty", h.killedRestartedEmpty)
	if h.Flush != nil {
		t.Run("Flush", h.flush)
	}
	if h.Delete != nil {
		t.Run("KeyDeleted", h.keyDeleted)
	}
	if h.PutForeign != nil {
		t.Run("ForeignValue", h.foreign)
	}
	t.Run("ServerDownAtStart", h.downAtStart)
}

func (h FaultHooks) two(t *testing.T, election string) []*electiontesting.Candidate {
	return []*electiontesting.Candidate{
		electiontesting.StartCandidate(t, h.NewBackend(t), election, "c1", nil),
		electiontesting.StartCandidate(t, h.NewBackend(t), election, "c2", nil),
	}
}

func (h FaultHooks) takeoverLimit() time.Duration {
	return electiontesting.LeaderLimit + electiontesting.FaultLease + h.Slack
}

// killedRestartedEmpty: the server is killed mid-leadership. The leader
// steps down within RenewDeadline (its renewals fail); after a restart
// without data a leader is elected again with a term above every earlier
// one.
func (h FaultHooks) killedRestartedEmpty(t *testing.T) {
	e := electiontesting.Election(t)
	cs := h.two(t, e)
	leader, first := electiontesting.WaitLeader(t, cs, electiontesting.LeaderLimit)
	killed := time.Now()
	if err := h.Server.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := electiontesting.WaitStopped(t, leader, first.Term, electiontesting.FaultRenew+5*time.Second)
	if took := ev.Time.Sub(killed); took > electiontesting.FaultRenew+2*time.Second {
		t.Errorf("stepped down %v after the kill, want within RenewDeadline %v (+2s slack)", took, electiontesting.FaultRenew)
	}
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	// The step-down comes at the renew deadline even while a renewal is
	// still in flight (a client dialling a dead server with retries); its
	// failure is reported when that call returns, so it may come after.
	electiontesting.WaitFor(t, electiontesting.FaultRenew+5*time.Second, "a failed renewal event", func() bool {
		_, ok := leader.Events.Find(func(ev fxelection.Event) bool {
			return electiontesting.IsStoreFailure(ev) && ev.Op == backendkit.OpRenew
		})
		return ok
	})
	if h.Empty != nil {
		h.Empty(t)
	}
	if err := h.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	_, second := electiontesting.WaitNewTerm(t, cs, first.Term, h.takeoverLimit())
	t.Logf("stepped down %v after the kill; term %d → %d after an empty restart", ev.Time.Sub(killed), first.Term, second.Term)
}

// flush: every key dropped from outside. The leader steps down at its next
// renewal (lease lost); the next leader's term is still higher.
func (h FaultHooks) flush(t *testing.T) {
	h.lost(t, "the flush", func(string) { h.Flush(t) })
}

// keyDeleted: the lease record deleted from outside, as flush but for one
// election.
func (h FaultHooks) keyDeleted(t *testing.T) {
	h.lost(t, "the delete", func(e string) { h.Delete(t, e) })
}

// lost runs a scenario in which do takes the lease away from under its
// leader: the leader steps down at its next renewal (lease lost), and the
// next leader's term is higher.
func (h FaultHooks) lost(t *testing.T, what string, do func(election string)) {
	e := electiontesting.Election(t)
	cs := h.two(t, e)
	leader, first := electiontesting.WaitLeader(t, cs, electiontesting.LeaderLimit)
	do(e)
	stoppedLost(t, leader, first.Term)
	_, second := electiontesting.WaitNewTerm(t, cs, first.Term, electiontesting.LeaderLimit)
	t.Logf("term %d → %d after %s", first.Term, second.Term, what)
}

// stoppedLost waits for leader to step down from term because it lost
// the lease.
func stoppedLost(t *testing.T, leader *electiontesting.Candidate, term uint64) {
	t.Helper()
	ev := electiontesting.WaitStopped(t, leader, term, electiontesting.FaultRenew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
}

// foreign: a foreign value overwrites a held lease. The leader steps down
// (lease lost), candidates report invalid-record errors and nobody takes
// the foreign value over while it lasts; once it expires (or is deleted) a
// leader is elected with a higher term. Nothing panics.
func (h FaultHooks) foreign(t *testing.T) {
	e := electiontesting.Election(t)
	cs := h.two(t, e)
	leader, first := electiontesting.WaitLeader(t, cs, electiontesting.LeaderLimit)
	const ttl = 4 * time.Second
	written := time.Now()
	h.PutForeign(t, e, ttl)
	stoppedLost(t, leader, first.Term)
	electiontesting.WaitFor(t, 10*time.Second, "an invalid-record error event", func() bool {
		for _, c := range cs {
			if _, ok := c.Events.Find(func(ev fxelection.Event) bool {
				return errors.Is(ev.Err, backendkit.ErrInvalidRecord)
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
	_, second := electiontesting.WaitNewTerm(t, cs, first.Term, h.takeoverLimit())
	t.Logf("term %d → %d after the foreign value went away", first.Term, second.Term)
}

// downAtStart: a candidate starts while the server is down. It reports
// store failures (events, OnError, Status) and backs off exponentially;
// once the server is up it leads.
func (h FaultHooks) downAtStart(t *testing.T) {
	if err := h.Server.Stop(); err != nil {
		t.Fatal(err)
	}
	e := electiontesting.Election(t)
	var mu sync.Mutex
	var opErrs []*fxelection.OpError
	c := electiontesting.StartCandidate(t, h.NewBackend(t), e, "c1", func(cfg *fxelection.Config) {
		cfg.Callbacks.OnError = func(err error) {
			var oe *fxelection.OpError
			if errors.As(err, &oe) {
				mu.Lock()
				opErrs = append(opErrs, oe)
				mu.Unlock()
			}
		}
	})
	failures := func() []fxelection.Event {
		return c.Events.Filter(func(ev fxelection.Event) bool {
			return electiontesting.IsStoreFailure(ev) && ev.Op == backendkit.OpAcquire
		})
	}
	electiontesting.WaitFor(t, 30*time.Second, "four failed acquisitions", func() bool { return len(failures()) >= 4 })
	fs := failures()
	// Lower bounds only: waits never end early. Failure n is followed by
	// RetryPeriod·2^(n−1), capped at MaxBackoff, plus jitter.
	for i := 1; i < len(fs); i++ {
		want := min(electiontesting.FaultRetry<<(i-1), electiontesting.FaultMaxBackoff)
		if gap := fs[i].Time.Sub(fs[i-1].Time); gap < want {
			t.Errorf("gap after failure %d = %v, want at least %v (backoff)", i, gap, want)
		}
	}
	electiontesting.WaitFor(t, 10*time.Second, "OnError calls", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(opErrs) > 0
	})
	mu.Lock()
	if oe := opErrs[0]; oe.Op != backendkit.OpAcquire || oe.Election != e {
		t.Errorf("OnError got %v", oe)
	}
	mu.Unlock()
	if c.Elector.Status().LastError == nil {
		t.Error("Status has no LastError")
	}
	if _, ok := c.Elector.Lease(); ok {
		t.Fatal("leads while the server is down")
	}
	if err := h.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{c}, electiontesting.FaultMaxBackoff*2+electiontesting.LeaderLimit)
}
