package fxelection

import (
	"context"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
)

// StopReason says why a leader stopped leading.
type StopReason string

// Reasons for stopping leading.
const (
	// ReasonDeadline: no renewal succeeded within RenewDeadline.
	ReasonDeadline StopReason = "renew deadline exceeded"
	// ReasonLost: a renewal found the lease taken, expired or deleted.
	ReasonLost StopReason = "lease lost"
	// ReasonResigned: Resign was called.
	ReasonResigned StopReason = "resigned"
	// ReasonStopped: the elector was stopped.
	ReasonStopped StopReason = "stopped"
	// (handover.ReasonPreempted: a candidate of higher priority asked for
	// the lease, Config.Candidacy.Preempt, and it was handed over to it.)
	// ReasonUnhealthy: Config.Health.Check failed Health.Threshold times in a
	// row; the lease was released so that a healthy candidate takes over.
	ReasonUnhealthy StopReason = "unhealthy"
)

// Callbacks are user hooks for leadership changes. None of them runs on the
// elector's renewal goroutine: they are called in order from one delivery
// goroutine per elector, which runs only while callbacks wait
// (OnStartedLeading gets a goroutine of its own), so a slow handler delays
// only later callbacks, never a renewal. Leadership
// callbacks are never dropped while the elector runs; OnNewLeader and
// OnError calls are dropped while 1024 or more callbacks wait behind a
// blocked handler.
//
// A callback that panics is recovered: the panic is logged, delivered to
// OnError as a *PanicError and to observers as an
// EventPanic, and the elector carries on as if the callback had returned (a
// panicking OnStartedLeading does not end the leadership; its leader work
// counts as finished). A panic in OnError is only logged.
type Callbacks struct {
	// OnStartedLeading runs in its own goroutine when this candidate becomes
	// leader. ctx is cancelled the moment leadership ends and carries the
	// lease (LeaseFromContext) for fencing. Stop waits for it to return
	// before releasing the lease, bounded by the stop timeout.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called once after every OnStartedLeading, when
	// leadership ends, with the lease that ended and why. It is called only
	// after that OnStartedLeading has returned, so state set in one and
	// cleared in the other ends up cleared: the leader context is cancelled
	// first, so an OnStartedLeading that honours it returns promptly. One
	// that ignores its context is waited for at most StopTimeout, then
	// OnStoppedLeading is called anyway (and later callbacks wait behind it
	// meanwhile). Stop delivers it before returning, within its bound.
	OnStoppedLeading func(lease Lease, reason StopReason)
	// OnNewLeader is called when the observed leader (holder or term)
	// changes, this candidate included.
	OnNewLeader func(leader Lease)
	// OnError is called with an *OpError for every store failure (its
	// message passed through backendkit.RedactError), and with a *PanicError when an
	// observer or another callback panicked. "Held by someone else" and
	// "lease lost" are not errors.
	OnError func(err error)
}

// EventKind tells an Observer what happened.
type EventKind int

// Event kinds.
const (
	// EventStartedLeading: Lease is the new leadership.
	EventStartedLeading EventKind = iota + 1
	// EventStoppedLeading: Lease is the leadership that ended, Reason why.
	EventStoppedLeading
	// EventNewLeader: Lease is the leader now observed.
	EventNewLeader
	// EventOperation: one backend call, Op, Duration and Err (nil, or an
	// error matching backendkit.ErrLeaseHeld, backendkit.ErrLeaseLost, backendkit.ErrNoLease, or a store
	// failure).
	EventOperation
	// EventRenewed: a successful renewal; Margin is LeaseDuration minus the
	// time from the start of the previous successful renewal (or the
	// acquisition) to this renewal's completion: how much of the lease was
	// left when it was extended.
	EventRenewed
	// EventDetached: the elector stopped; an observer should drop its state
	// for this elector. Observers receive nothing after it.
	EventDetached
	// EventPanic: an Observer or a callback panicked and was recovered; Err
	// is the *PanicError. A panic while observing EventPanic is only logged.
	EventPanic
)

// eventHandOver is the kind of a hand-over's outcome, named for
// applications by handover.Event (the hand-over's vocabulary lives with
// it); it follows EventPanic.
const eventHandOver EventKind = handover.Event

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventStartedLeading:
		return "started-leading"
	case EventStoppedLeading:
		return "stopped-leading"
	case EventNewLeader:
		return "new-leader"
	case EventOperation:
		return "operation"
	case EventRenewed:
		return "renewed"
	case EventDetached:
		return "detached"
	case EventPanic:
		return "panic"
	case eventHandOver:
		return "hand-over"
	}
	return "unknown"
}

// Event is what an Observer receives.
type Event struct {
	// Kind says what happened and which fields below are set.
	Kind EventKind
	// Election and Identity are the elector's Config.Name and Identity.
	Election string
	Identity string
	// Backend is BackendName of the elector's backend.
	Backend string
	// Time is when the event happened (for operations: when they ended).
	Time time.Time
	// Lease is the lease concerned (started, stopped, renewed, new leader).
	Lease Lease
	// Reason is why leadership ended (EventStoppedLeading).
	Reason StopReason
	// Op, Duration and Err describe one backend call (EventOperation). Err
	// has passed through backendkit.RedactError. For EventPanic, Err is the
	// *PanicError.
	Op       string
	Duration time.Duration
	Err      error
	// Margin is the lease left at a renewal (EventRenewed).
	Margin time.Duration
}

// StoreFailure reports whether ev is a backend operation that failed for
// another reason than the contract's expected outcomes (held by someone
// else, lease lost, no lease): the store was unreachable, refused, or
// answered with something the backend could not use. A call cut short by
// Stop (context.Canceled) counts too; OnError does not receive those.
func (ev Event) StoreFailure() bool {
	return ev.Kind == EventOperation && backendkit.IsStoreFailure(ev.Err)
}

// Observer receives an elector's events synchronously, on the goroutine
// that produced them (often the renewal loop): Observe must be fast and must
// not block or call back into the elector. It is how metrics plug in; use
// Callbacks for application logic. A panic in Observe is recovered and
// reported (an EventPanic to every observer, a *PanicError to OnError); it
// never reaches the elector's goroutines.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// LeaseFromContext returns the lease carried by a leader context (given to
// OnStartedLeading and RunIfLeader functions). Use its Term as the fencing
// token for writes made under that leadership.
func LeaseFromContext(ctx context.Context) (Lease, bool) { return backendkit.LeaseFromContext(ctx) }
