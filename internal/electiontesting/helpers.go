// Package electiontesting holds the test helpers this repository's own
// tests share and that package electiontest uses itself, but that a
// backend author outside the repository does not need: a test context,
// polling, an event recorder, electors on a short fault timing
// (StartCandidate) and waits on them, a recorder of leadership intervals,
// a recorder of a Watcher's changes, a log sink, fresh election names and
// record comparison. Code outside this repository copies what it wants.
package electiontesting

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
)

// Context returns a context for one test: it is cancelled when the test
// ends, or after a minute, so a call to a store that hangs fails the test
// instead of hanging it.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Eventually bounds a wait for an event that has no protocol bound (a
// subscription registered, a wake-up delivered, a server ready): the test
// fails on a hang, never on a slow machine. A wait that checks a bound the
// protocol sets derives its limit from the timings instead.
const Eventually = time.Minute

// WaitFor polls cond every 10ms until it holds, failing t (naming what)
// when limit passes first. For tests that wait on a real store or an
// elector talking to one: give limit generous margins.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Events records the events of one or more electors for assertions: pass it
// to Elector.AddObserver. It keeps every event, in the order observed. It
// is safe for concurrent use; the zero value is ready.
type Events struct{ syncList[fxelection.Event] }

// Observe implements fxelection.Observer.
func (r *Events) Observe(ev fxelection.Event) { r.add(ev) }

// All returns a copy of the events recorded so far.
func (r *Events) All() []fxelection.Event { return r.snapshot() }

// syncList is a list goroutines append to while a test reads it.
type syncList[T any] struct {
	mu  sync.Mutex
	all []T
}

func (l *syncList[T]) add(v T) {
	l.mu.Lock()
	l.all = append(l.all, v)
	l.mu.Unlock()
}

// snapshot returns a copy of the list.
func (l *syncList[T]) snapshot() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.all...)
}

// Filter returns the events recorded so far that match pred, in order.
func (r *Events) Filter(pred func(fxelection.Event) bool) []fxelection.Event {
	var out []fxelection.Event
	for _, ev := range r.All() {
		if pred(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// Find returns the first event recorded so far that matches pred, if any.
func (r *Events) Find(pred func(fxelection.Event) bool) (fxelection.Event, bool) {
	for _, ev := range r.All() {
		if pred(ev) {
			return ev, true
		}
	}
	return fxelection.Event{}, false
}

// WaitFor polls (see WaitFor) until an event matching pred was recorded
// and returns the first such event.
func (r *Events) WaitFor(t testing.TB, limit time.Duration, what string, pred func(fxelection.Event) bool) fxelection.Event {
	t.Helper()
	var ev fxelection.Event
	WaitFor(t, limit, what, func() bool {
		var ok bool
		ev, ok = r.Find(pred)
		return ok
	})
	return ev
}

// Kind returns a predicate for Events' methods that matches events of
// kind k.
func Kind(k fxelection.EventKind) func(fxelection.Event) bool {
	return func(ev fxelection.Event) bool { return ev.Kind == k }
}

// IsStoreFailure reports whether ev is an operation that failed for
// another reason than the contract's expected outcomes (ErrLeaseHeld,
// ErrLeaseLost, ErrNoLease): the store was unreachable, refused or
// answered with something the backend could not use.
func IsStoreFailure(ev fxelection.Event) bool { return ev.StoreFailure() }

// The short elector timing StartCandidate uses, with the core's margins:
// a 2s lease (whole seconds, for stores whose TTLs are), renewed within
// 1.3s, retried every 300ms, backing off to at most 1.2s.
const (
	FaultLease      = 2 * time.Second
	FaultRenew      = 1300 * time.Millisecond
	FaultRetry      = 300 * time.Millisecond
	FaultMaxBackoff = 1200 * time.Millisecond
)

// Candidate is a running elector and the events it emitted.
type Candidate struct {
	Elector *fxelection.Elector
	Events  *Events
	// Faulty is the fault injector between the elector and its backend,
	// for a Candidate from StartFaultyCandidate; nil otherwise.
	Faulty *faultinject.Backend
}

// StartCandidate starts an elector on b for election as identity (with
// metadata {"id": identity}) with the fault timing above, after tweak (if
// not nil) has changed its config. The elector is stopped when the test
// ends.
func StartCandidate(t testing.TB, b fxelection.Backend, election, identity string, tweak func(*fxelection.Config)) *Candidate {
	t.Helper()
	cfg := fxelection.Config{
		Name:     election,
		Identity: identity,
		Metadata: map[string]string{"id": identity},
		Timing: fxelection.Timing{
			LeaseDuration: FaultLease,
			RenewDeadline: FaultRenew,
			RetryPeriod:   FaultRetry,
			MaxBackoff:    FaultMaxBackoff,
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := fxelection.New(cfg, b)
	if err != nil {
		t.Fatalf("New elector: %v", err)
	}
	c := &Candidate{Elector: e, Events: &Events{}}
	e.AddObserver(c.Events)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return c
}

// StartFaultyCandidate is StartCandidate with b behind a
// faultinject.Backend of its own (Candidate.Faulty), through which a test
// cuts the elector off from its store.
func StartFaultyCandidate(t testing.TB, b fxelection.Backend, election, identity string, tweak func(*fxelection.Config)) *Candidate {
	t.Helper()
	f := faultinject.New(b)
	c := StartCandidate(t, f, election, identity, tweak)
	c.Faulty = f
	return c
}

// WaitLeader waits up to limit for exactly one of cs to lead and returns
// it with its lease. It fails t at once if two lead at the same time.
func WaitLeader(t testing.TB, cs []*Candidate, limit time.Duration) (*Candidate, fxelection.Lease) {
	t.Helper()
	var leader *Candidate
	var lease fxelection.Lease
	WaitFor(t, limit, "a leader", func() bool {
		n := 0
		for _, c := range cs {
			if l, ok := c.Elector.Lease(); ok {
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

// LeaderLimit bounds how long electing a leader may take with the fault
// timing on a busy machine: a lease that must expire, two retries and ten
// seconds of margin.
const LeaderLimit = FaultLease + 2*FaultRetry + 10*time.Second

// WaitStopped waits up to limit for c's stopped-leading event for term and
// returns it.
func WaitStopped(t testing.TB, c *Candidate, term uint64, limit time.Duration) fxelection.Event {
	t.Helper()
	return c.Events.WaitFor(t, limit, fmt.Sprintf("the leader of term %d to step down", term), func(ev fxelection.Event) bool {
		return ev.Kind == fxelection.EventStoppedLeading && ev.Lease.Term == term
	})
}

// WaitNewTerm waits up to limit for one of cs to lead a term above old and
// returns it with its lease. When it fails, it logs each candidate's last
// error.
func WaitNewTerm(t testing.TB, cs []*Candidate, old uint64, limit time.Duration) (*Candidate, fxelection.Lease) {
	t.Helper()
	var leader *Candidate
	var lease fxelection.Lease
	t.Cleanup(func() {
		if t.Failed() {
			for i, c := range cs {
				LogCandidate(t, fmt.Sprintf("candidate %d", i), c)
			}
		}
	})
	WaitFor(t, limit, fmt.Sprintf("a leader of a term above %d", old), func() bool {
		for _, c := range cs {
			if l, ok := c.Elector.Lease(); ok && l.Term > old {
				leader, lease = c, l
				return true
			}
		}
		return false
	})
	return leader, lease
}

// LogCandidate logs what a failed wait needs to tell why: c's status (its
// role, the leader it last saw, the call in flight, its last error) and
// its last events.
func LogCandidate(t testing.TB, name string, c *Candidate) {
	t.Helper()
	s := c.Elector.Status()
	t.Logf("%s: running=%v leading=%v holding=%v term=%d leader=%q/%d known=%v in-flight=%q since %v last contact %v ago; last error: %v",
		name, s.Running, s.Leading, s.Holding, s.Lease.Term, s.Leader.Holder, s.Leader.Term, s.LeaderKnown,
		s.InFlight, s.InFlightSince.Format(time.StampMilli), time.Since(s.LastContact).Round(time.Millisecond), s.LastError)
	evs := c.Events.All()
	if len(evs) > 12 {
		evs = evs[len(evs)-12:]
	}
	for _, ev := range evs {
		t.Logf("%s:   %s %s op=%q reason=%q holder=%q term=%d err=%v", name, ev.Time.Format(time.StampMilli), ev.Kind, ev.Op, ev.Reason, ev.Lease.Holder, ev.Lease.Term, ev.Err)
	}
}

// LogBuffer is an io.Writer that keeps what was written, safe for
// concurrent use: a sink for an elector's or an app's logger that a test
// reads while they run. The zero value is ready.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// CheckElectorErrors runs a real elector on b (a backend whose store
// fails every operation: unreachable, or refusing its credentials) for
// election, as identity "a" with a 15s lease (Azure's minimum) retried
// every 100ms, until it reports an error through OnError; t fails if none
// comes within 30s. It passes that error to check as "OnError", then
// Status().LastError as "Status().LastError", and fails t if leaks reports
// that the elector's log (slog text) holds a secret. For tests that what
// an application sees of a backend's errors keeps its secrets out.
func CheckElectorErrors(t testing.TB, b fxelection.Backend, election string, check func(what string, err error), leaks func(log string) bool) {
	t.Helper()
	var logs LogBuffer
	errs := make(chan error, 16)
	el, err := fxelection.New(fxelection.Config{
		Name: election, Identity: "a",
		Timing: fxelection.Timing{
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   100 * time.Millisecond,
		}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Callbacks: fxelection.Callbacks{OnError: func(err error) {
			select {
			case errs <- err:
			default:
			}
		}},
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := el.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := el.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	select {
	case err := <-errs:
		check("OnError", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no OnError within 30s")
	}
	check("Status().LastError", el.Status().LastError)
	if leaks(logs.String()) {
		t.Fatalf("the elector's log leaks a secret: %s", logs.String())
	}
}
