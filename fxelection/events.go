package fxelection

import (
	"context"
	"sync"
	"time"
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
)

// Callbacks are user hooks for leadership changes. None of them runs on the
// elector's renewal goroutine: they are called in order from one delivery
// goroutine per elector (OnStartedLeading gets a goroutine of its own), so a
// slow handler delays only later callbacks, never a renewal. Leadership
// callbacks are never dropped; OnNewLeader and OnError calls are dropped
// while more than 1024 callbacks wait behind a blocked handler.
type Callbacks struct {
	// OnStartedLeading runs in its own goroutine when this candidate becomes
	// leader. ctx is cancelled the moment leadership ends and carries the
	// lease (LeaseFromContext) for fencing. Stop waits for it to return
	// before releasing the lease, bounded by the stop timeout.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called once after every OnStartedLeading, when
	// leadership ends, with the lease that ended and why. The leader context
	// is already cancelled; the OnStartedLeading goroutine may still be
	// returning.
	OnStoppedLeading func(lease Lease, reason StopReason)
	// OnNewLeader is called when the observed leader (holder or term)
	// changes, this candidate included.
	OnNewLeader func(leader Lease)
	// OnError is called with an *OpError for every store failure. "Held by
	// someone else" and "lease lost" are not errors.
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
	// error matching ErrLeaseHeld, ErrLeaseLost, ErrNoLease, or a store
	// failure).
	EventOperation
	// EventRenewed: a successful renewal; Margin is LeaseDuration minus the
	// time from the start of the previous successful renewal (or the
	// acquisition) to this renewal's completion: how much of the lease was
	// left when it was extended.
	EventRenewed
	// EventDetached: the elector stopped; an observer should drop its state
	// for this elector.
	EventDetached
)

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
	}
	return "unknown"
}

// Backend operation names used in events and errors.
const (
	OpAcquire = "acquire"
	OpRenew   = "renew"
	OpRelease = "release"
	OpGet     = "get"
)

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
	// Op, Duration and Err describe one backend call (EventOperation).
	Op       string
	Duration time.Duration
	Err      error
	// Margin is the lease left at a renewal (EventRenewed).
	Margin time.Duration
}

// Observer receives an elector's events synchronously, on the goroutine
// that produced them (often the renewal loop): Observe must be fast and must
// not block or call back into the elector. It is how metrics plug in; use
// Callbacks for application logic.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// maxQueued bounds droppable callbacks waiting behind a slow handler.
const maxQueued = 1024

// dispatcher runs callbacks in order on one goroutine it owns.
type dispatcher struct {
	mu      sync.Mutex
	queue   []func()
	signal  chan struct{}
	closing bool
	done    chan struct{}
	dropped int
}

func newDispatcher() *dispatcher {
	d := &dispatcher{signal: make(chan struct{}, 1), done: make(chan struct{})}
	go d.run()
	return d
}

// enqueue adds f; droppable calls are discarded when the queue is long.
func (d *dispatcher) enqueue(f func(), droppable bool) {
	d.mu.Lock()
	if d.closing || (droppable && len(d.queue) >= maxQueued) {
		if droppable {
			d.dropped++
		}
		d.mu.Unlock()
		return
	}
	d.queue = append(d.queue, f)
	d.mu.Unlock()
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			closing := d.closing
			d.mu.Unlock()
			if closing {
				return
			}
			<-d.signal
			continue
		}
		f := d.queue[0]
		d.queue[0] = nil
		d.queue = d.queue[1:]
		d.mu.Unlock()
		f()
	}
}

// close delivers what is queued, then ends the goroutine. It waits until
// then or ctx is done; in the latter case the goroutine ends when the
// handler it is blocked in returns.
func (d *dispatcher) close(ctx context.Context) error {
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	select {
	case d.signal <- struct{}{}:
	default:
	}
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tracker counts running leader work so Stop can wait for it.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

// wait returns a channel closed when no work runs.
func (t *tracker) wait() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return t.idle
}

type leaseKey struct{}

// ContextWithLease returns ctx carrying lease, as leader contexts do.
func ContextWithLease(ctx context.Context, lease Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, lease)
}

// LeaseFromContext returns the lease carried by a leader context (given to
// OnStartedLeading and RunIfLeader functions). Use its Term as the fencing
// token for writes made under that leadership.
func LeaseFromContext(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}
