package fxelection

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/redact"
)

// AddObserver attaches o; it receives events until the returned function is
// called or the elector stops (EventDetached is the last event). Observers
// see every backend operation, so keep them fast. A panic in o is recovered
// and reported as an EventPanic; see Observer.
func (e *Elector) AddObserver(o Observer) (remove func()) {
	entry := &observerEntry{o}
	for {
		old := e.obs.Load()
		var next []*observerEntry
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, entry)
		if e.obs.CompareAndSwap(old, &next) {
			break
		}
	}
	return func() {
		for {
			old := e.obs.Load()
			var next []*observerEntry
			for _, x := range *old {
				if x != entry {
					next = append(next, x)
				}
			}
			if e.obs.CompareAndSwap(old, &next) {
				return
			}
		}
	}
}

func (e *Elector) observe(ev Event) {
	if e.detached.Load() {
		return
	}
	e.broadcast(ev)
}

// broadcast delivers ev to every observer.
func (e *Elector) broadcast(ev Event) {
	list := e.obs.Load()
	if list == nil || len(*list) == 0 {
		return
	}
	ev.Election, ev.Identity, ev.Backend = e.cfg.Name, e.cfg.Identity, e.kind
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	for _, x := range *list {
		e.deliver(x.o, ev)
	}
}

// deliver calls one observer, recovering a panic.
func (e *Elector) deliver(o Observer, ev Event) {
	defer func() {
		if v := recover(); v != nil {
			e.recovered(panicInObserver, v, ev.Kind == EventPanic)
		}
	}()
	o.Observe(ev)
}

// callbacks returns the elector's callback dispatcher, creating it.
func (e *Elector) callbacks() *dispatcher {
	if d := e.disp.Load(); d != nil {
		return d
	}
	d := newDispatcher(func(where string, v any) { e.recovered(where, v, where == panicInErrorCallback) })
	if e.disp.CompareAndSwap(nil, d) {
		return d
	}
	return e.disp.Load()
}

// recovered reports a panic recovered in where. quiet reports it only in the
// log: for panics while reporting a panic (an observer panicking on
// EventPanic, OnError panicking), which would otherwise loop.
func (e *Elector) recovered(where string, v any, quiet bool) {
	pe := &PanicError{Election: e.cfg.Name, Where: where, Value: v, Stack: debug.Stack()}
	e.log.Error("recovered panic", "in", where, "panic", fmt.Sprint(v), "stack", string(pe.Stack))
	if quiet {
		return
	}
	e.observe(Event{Kind: EventPanic, Err: pe})
	if cb := e.cfg.Callbacks.OnError; cb != nil && where != panicInErrorCallback && e.canDispatch.Load() {
		e.callbacks().enqueue(panicInErrorCallback, func() { cb(pe) }, true)
	}
}

// observeLeader records the leader seen in the store and announces changes.
func (e *Elector) observeLeader(l Lease) {
	e.mu.Lock()
	changed := !e.leaderKnown || e.leader.Holder != l.Holder || e.leader.Term != l.Term
	e.leader, e.leaderKnown = l.Clone(), true
	e.mu.Unlock()
	for _, s := range e.pol.seers {
		s.sawLeader(e, l)
	}
	if !changed {
		return
	}
	e.log.Debug("leader observed", "leader", l.Holder, "term", l.Term)
	e.observe(Event{Kind: EventNewLeader, Lease: l.Clone()})
	if cb := e.cfg.Callbacks.OnNewLeader; cb != nil {
		l = l.Clone()
		e.callbacks().enqueue(panicInNewLeader, func() { cb(l) }, true)
	}
}

func (e *Elector) contact() {
	e.mu.Lock()
	e.lastContact = time.Now()
	e.mu.Unlock()
}

// fail records and announces a store failure. err has passed through
// backendkit.RedactError where the backend call returned it: that is the one place
// the core redacts, before anything (observers, callbacks, logs, Status)
// sees the error.
func (e *Elector) fail(op string, err error) {
	oe := &OpError{Election: e.cfg.Name, Op: op, Err: err}
	e.mu.Lock()
	e.lastFail = &failure{err: oe, at: time.Now()}
	e.mu.Unlock()
	e.log.Warn("election error", "op", op, "error", err)
	if cb := e.cfg.Callbacks.OnError; cb != nil {
		e.callbacks().enqueue(panicInErrorCallback, func() { cb(oe) }, true)
	}
}

// during records that the loop is in backend operation op until the
// returned function is called.
func (e *Elector) during(op string) (end func()) {
	e.inflight.Store(&inflightOp{op: op, since: time.Now()})
	return func() { e.inflight.Store(nil) }
}

// startedLeading queues OnStartedLeading for leadership t, on a goroutine
// of its own that counts as leader work.
func (e *Elector) startedLeading(t *leaderTerm) {
	run := e.cfg.Callbacks.OnStartedLeading
	if run == nil {
		// Nothing to run: no callback goroutine to start, and nothing for
		// OnStoppedLeading to wait for (startedDone stays nil).
		return
	}
	t.startedDone = make(chan struct{})
	e.work.add()
	queued := e.callbacks().enqueue(panicInStartedLeading, func() {
		// Wait until the goroutine runs the callback, so that no later
		// callback can overtake its start.
		began := make(chan struct{})
		go func() {
			defer e.work.done()
			defer close(t.startedDone)
			defer func() {
				if v := recover(); v != nil {
					e.recovered(panicInStartedLeading, v, false)
				}
			}()
			close(began)
			run(t)
		}()
		<-began
	}, false)
	if !queued {
		close(t.startedDone)
		e.work.done()
	}
}

// stoppedLeading queues OnStoppedLeading for the end of t, after t's
// OnStartedLeading has returned (awaitStarted).
func (e *Elector) stoppedLeading(t *leaderTerm, reason StopReason) {
	cb := e.cfg.Callbacks.OnStoppedLeading
	if cb == nil {
		return
	}
	l := t.lease.Clone()
	e.callbacks().enqueue(panicInStoppedLeading, func() {
		e.awaitStarted(t)
		cb(l, reason)
	}, false)
}

// awaitStarted waits, on the callback goroutine, until t's OnStartedLeading
// has returned, so that OnStoppedLeading never runs before or alongside it;
// the leader context is already cancelled, so a callback that honours it
// returns promptly. One that does not is given StopTimeout, then
// OnStoppedLeading is delivered anyway.
func (e *Elector) awaitStarted(t *leaderTerm) {
	if t.startedDone == nil {
		return
	}
	select {
	case <-t.startedDone:
		return
	default:
	}
	timer := time.NewTimer(e.cfg.StopTimeout)
	defer timer.Stop()
	select {
	case <-t.startedDone:
	case <-timer.C:
		e.log.Warn("OnStartedLeading has not returned StopTimeout after its leadership ended; calling OnStoppedLeading anyway", "term", t.lease.Term)
	}
}

// redactErr passes a store failure through backendkit.RedactError, without
// secrets, before callbacks, observers, logs or Status see it; errors.As
// still finds a *backendkit.HeldError through it. A backend built on
// backendkit.Redacting has redacted the error with its credentials already
// (the one path errors leave a backend by), so this changes nothing then;
// it covers a backend that does not embed Redacting.
func redactErr(err error) error { return redact.Error[*backendkit.HeldError](err) }
