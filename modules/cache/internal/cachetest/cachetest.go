// Package cachetest holds the fault scenarios every cache adapter runs
// against its real server (server killed and restarted empty, flush, key
// deleted, foreign value, server down at start), so the adapters share one
// copy of them.
package cachetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// Fault-test timing: short, with the core's margins.
const (
	Lease = 2 * time.Second
	Renew = 1300 * time.Millisecond
	Retry = 300 * time.Millisecond
	MaxBO = 1200 * time.Millisecond
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

// RunFaults runs every fault scenario.
func RunFaults(t *testing.T, h Hooks) {
	t.Run("KilledRestartedEmpty", h.killedRestartedEmpty)
	t.Run("Flush", h.flush)
	t.Run("KeyDeleted", h.keyDeleted)
	t.Run("ForeignValue", h.foreign)
	t.Run("ServerDownAtStart", h.downAtStart)
}

// Watch records an elector's events (renewals left out).
type Watch struct {
	mu     sync.Mutex
	events []fxelection.Event
}

// Observe implements fxelection.Observer.
func (w *Watch) Observe(ev fxelection.Event) {
	if ev.Kind == fxelection.EventRenewed {
		return
	}
	w.mu.Lock()
	w.events = append(w.events, ev)
	w.mu.Unlock()
}

// All returns the events so far.
func (w *Watch) All() []fxelection.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]fxelection.Event(nil), w.events...)
}

// Find returns the first event matching pred.
func (w *Watch) Find(pred func(fxelection.Event) bool) (fxelection.Event, bool) {
	for _, ev := range w.All() {
		if pred(ev) {
			return ev, true
		}
	}
	return fxelection.Event{}, false
}

// WaitUntil polls cond until it holds, failing the test after limit.
func WaitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Candidate is a running elector and its events.
type Candidate struct {
	E *fxelection.Elector
	W *Watch
}

// Start starts an elector on b with the fault-test timing.
func Start(t *testing.T, b fxelection.Backend, election, identity string, tweak func(*fxelection.Config)) *Candidate {
	t.Helper()
	cfg := fxelection.Config{
		Name:          election,
		Identity:      identity,
		Metadata:      map[string]string{"id": identity},
		LeaseDuration: Lease,
		RenewDeadline: Renew,
		RetryPeriod:   Retry,
		MaxBackoff:    MaxBO,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := fxelection.New(cfg, b)
	if err != nil {
		t.Fatalf("New elector: %v", err)
	}
	w := &Watch{}
	e.AddObserver(w)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return &Candidate{E: e, W: w}
}

// LeaderLimit bounds how long electing a leader may take on a busy machine.
const LeaderLimit = Lease + 2*Retry + 10*time.Second

// WaitLeader waits for exactly one of cs to lead and returns it.
func WaitLeader(t *testing.T, cs []*Candidate, limit time.Duration) (*Candidate, fxelection.Lease) {
	t.Helper()
	var leader *Candidate
	var lease fxelection.Lease
	WaitUntil(t, limit, "a leader", func() bool {
		n := 0
		for _, c := range cs {
			if l, ok := c.E.Lease(); ok {
				leader, lease = c, l
				n++
			}
		}
		if n > 1 {
			t.Fatalf("%d candidates lead at once", n)
		}
		return n == 1
	})
	return leader, lease
}

// WaitNewTerm waits for a leader with a term above old.
func WaitNewTerm(t *testing.T, cs []*Candidate, old uint64, limit time.Duration) fxelection.Lease {
	t.Helper()
	var l fxelection.Lease
	t.Cleanup(func() {
		if t.Failed() {
			for i, c := range cs {
				t.Logf("candidate %d: last error: %v", i, c.E.Status().LastError)
			}
		}
	})
	WaitUntil(t, limit, "a leader with a higher term", func() bool {
		for _, c := range cs {
			if got, ok := c.E.Lease(); ok && got.Term > old {
				l = got
				return true
			}
		}
		return false
	})
	return l
}

// Stopped waits for c's stopped-leading event for term.
func Stopped(t *testing.T, c *Candidate, term uint64, limit time.Duration) fxelection.Event {
	t.Helper()
	var ev fxelection.Event
	WaitUntil(t, limit, "stopped leading", func() bool {
		var ok bool
		ev, ok = c.W.Find(func(ev fxelection.Event) bool {
			return ev.Kind == fxelection.EventStoppedLeading && ev.Lease.Term == term
		})
		return ok
	})
	return ev
}

// IsStoreFailure reports whether ev is a failed operation other than the
// contract's expected outcomes.
func IsStoreFailure(ev fxelection.Event) bool {
	return ev.Kind == fxelection.EventOperation && ev.Err != nil &&
		!errors.Is(ev.Err, fxelection.ErrLeaseHeld) && !errors.Is(ev.Err, fxelection.ErrLeaseLost) &&
		!errors.Is(ev.Err, fxelection.ErrNoLease)
}

// Election returns an election name for t.
func Election(t testing.TB) string {
	return fmt.Sprintf("fault-%d-%s", time.Now().UnixNano()%1_000_000, t.Name())
}

func (h Hooks) two(t *testing.T, election string) []*Candidate {
	return []*Candidate{
		Start(t, h.NewBackend(t), election, "c1", nil),
		Start(t, h.NewBackend(t), election, "c2", nil),
	}
}

func (h Hooks) takeoverLimit() time.Duration { return LeaderLimit + Lease + h.Slack }

// killedRestartedEmpty: the server is killed mid-leadership. The leader
// steps down within RenewDeadline (its renewals fail); after a restart
// without data a leader is elected again with a term above every earlier
// one.
func (h Hooks) killedRestartedEmpty(t *testing.T) {
	e := Election(t)
	cs := h.two(t, e)
	leader, first := WaitLeader(t, cs, LeaderLimit)
	killed := time.Now()
	if err := h.Server.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := Stopped(t, leader, first.Term, Renew+5*time.Second)
	if took := ev.Time.Sub(killed); took > Renew+2*time.Second {
		t.Errorf("stepped down %v after the kill, want within RenewDeadline %v (+2s slack)", took, Renew)
	}
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	if _, ok := leader.W.Find(func(ev fxelection.Event) bool {
		return IsStoreFailure(ev) && ev.Op == fxelection.OpRenew
	}); !ok {
		t.Error("no failed renewal was observed")
	}
	if h.Empty != nil {
		h.Empty(t)
	}
	if err := h.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	second := WaitNewTerm(t, cs, first.Term, h.takeoverLimit())
	t.Logf("stepped down %v after the kill; term %d → %d after an empty restart", ev.Time.Sub(killed), first.Term, second.Term)
}

// flush: every key dropped from outside. The leader steps down at its next
// renewal (lease lost); the next leader's term is still higher.
func (h Hooks) flush(t *testing.T) {
	e := Election(t)
	cs := h.two(t, e)
	leader, first := WaitLeader(t, cs, LeaderLimit)
	h.Flush(t)
	ev := Stopped(t, leader, first.Term, Renew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	second := WaitNewTerm(t, cs, first.Term, LeaderLimit)
	t.Logf("term %d → %d after the flush", first.Term, second.Term)
}

// keyDeleted: the lease key deleted from outside, as flush but for one key.
func (h Hooks) keyDeleted(t *testing.T) {
	e := Election(t)
	cs := h.two(t, e)
	leader, first := WaitLeader(t, cs, LeaderLimit)
	h.Delete(t, e)
	ev := Stopped(t, leader, first.Term, Renew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	second := WaitNewTerm(t, cs, first.Term, LeaderLimit)
	t.Logf("term %d → %d after the delete", first.Term, second.Term)
}

// foreign: a foreign value overwrites a held lease. The leader steps down
// (lease lost), candidates report invalid-record errors and nobody takes
// the foreign value over while it lasts; once it expires (or is deleted) a
// leader is elected with a higher term. Nothing panics.
func (h Hooks) foreign(t *testing.T) {
	e := Election(t)
	cs := h.two(t, e)
	leader, first := WaitLeader(t, cs, LeaderLimit)
	const ttl = 4 * time.Second
	written := time.Now()
	h.PutForeign(t, e, ttl)
	ev := Stopped(t, leader, first.Term, Renew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	WaitUntil(t, 10*time.Second, "an invalid-record error event", func() bool {
		for _, c := range cs {
			if _, ok := c.W.Find(func(ev fxelection.Event) bool {
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
			if l, ok := c.E.Lease(); ok && l.Term > first.Term {
				t.Fatalf("%s took over a foreign value after %v (it lasts %v)", l.Holder, time.Since(written), ttl)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !h.ForeignExpires {
		h.Delete(t, e)
	}
	second := WaitNewTerm(t, cs, first.Term, h.takeoverLimit())
	t.Logf("term %d → %d after the foreign value went away", first.Term, second.Term)
}

// downAtStart: candidates start while the server is down. They report store
// failures; once the server is up a leader is elected.
func (h Hooks) downAtStart(t *testing.T) {
	if err := h.Server.Stop(); err != nil {
		t.Fatal(err)
	}
	e := Election(t)
	c := Start(t, h.NewBackend(t), e, "c1", nil)
	WaitUntil(t, 30*time.Second, "three failed acquisitions", func() bool {
		n := 0
		for _, ev := range c.W.All() {
			if IsStoreFailure(ev) && ev.Op == fxelection.OpAcquire {
				n++
			}
		}
		return n >= 3
	})
	if c.E.Status().LastError == nil {
		t.Error("Status has no LastError")
	}
	if _, ok := c.E.Lease(); ok {
		t.Fatal("leads while the server is down")
	}
	if err := h.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	WaitLeader(t, []*Candidate{c}, MaxBO*2+LeaderLimit)
}
