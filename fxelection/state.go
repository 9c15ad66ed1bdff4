package fxelection

// The core's state: the Elector, the leadership (leaderTerm), the loop's
// requests and the Group, declared here so that every file of the core
// builds on them (layers_test.go has the order of the files).

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Elector campaigns for one election's lease on a Backend and keeps it while
// it can. It owns all timing: the leader renews every RetryPeriod and stops
// believing it leads once no renewal has succeeded within RenewDeadline of
// the start of the last successful one (measured on the local monotonic
// clock), which is before its lease can expire in the store. Followers retry
// every RetryPeriod (jittered), back off exponentially on store failures,
// and wake at once when the backend pushes a release.
//
// Panics in Observers and Callbacks are recovered (see PanicError), and
// backend errors are redacted (backendkit.RedactError) before anything else sees them.
//
// What it cannot promise: a process paused longer than LeaseDuration−
// RenewDeadline at the wrong moment, or a clock running that much faster,
// can act as leader after another took over. Use the fencing term
// (LeaseFromContext) to make such late writes harmless.
//
// One process can run many elections: a leader waiting for its next
// renewal holds no goroutine, electors that share a backend implementing
// backendkit.BatchRenewer renew in batches (one store round trip for many leases), and
// electors started together share a few goroutines for their first step
// instead of one each.
//
// An Elector is safe for concurrent use by many goroutines. Start it once;
// after Stop it cannot be started again. Callbacks never run on the
// goroutine that renews, so a slow callback cannot delay a renewal;
// observers are called synchronously and must be fast (see Observer).
type Elector struct {
	// Implementation notes. A leader's leadership runs on timer and request
	// events (leadStep), not on a goroutine of its own; campaigns started
	// together take their first step on a few goroutines shared per backend
	// (startCampaign). The fields are ordered to leave little padding: a
	// process running many elections keeps one Elector per election.

	cfg     Config
	backend Backend
	kind    string
	log     *slog.Logger

	// base carries the values of Start's context, without its
	// cancellation: every context of the elector derives from it.
	base context.Context
	// mail carries a token when requests wait in mailbox, events were
	// signalled while the loop runs (not parked), the backend pushed a
	// wake-up (woken) or Stop began (halted).
	mail chan struct{}
	// disp delivers callbacks; created on first use after Start (see
	// callbacks), so an elector whose callbacks never run has none.
	disp atomic.Pointer[dispatcher]
	// batch sends renewals in batches with other electors on the same
	// backend when it implements backendkit.BatchRenewer (nil otherwise); set by
	// Start.
	batch  *batcher
	work   tracker
	obs    atomic.Pointer[[]*observerEntry]
	lifeMu sync.Mutex // serialises Start and Stop

	// inflight is the backend operation the campaign loop is in (nil when
	// none), so that Stop can say what it gave up waiting for and Status
	// can show a wedged loop.
	inflight atomic.Pointer[inflightOp]
	// canDispatch is set by Start: callbacks are delivered from then on.
	canDispatch atomic.Bool
	// detached is set once Stop has sent EventDetached: observers get
	// nothing after it, even from a loop Stop had to leave running.
	detached atomic.Bool
	// subscribed is set once backendkit.Notifier.Subscribe has returned.
	subscribed atomic.Bool
	// healthy is false while Config.HealthCheck says this candidate must
	// not campaign (see health.go); true without a HealthCheck.
	healthy atomic.Bool
	// halted is set by Stop (with mu held) before anything else it does:
	// the campaign loop ends, its backend call in flight is cancelled
	// (opCancel) unless it is a renewal, which is let finish (see
	// renewalCut), and the leader context is cancelled.
	halted atomic.Bool
	// startState says where the campaign's first step is (guarded by
	// group.mu): see startCampaign.
	startState uint8
	// losses counts the leaderships in a row that ended by the renew
	// deadline with no successful renewal since (capped at
	// maxLosses): afterLead waits longer with each. Only the loop touches it.
	losses uint8
	// group is the Group the elector was made in; nil for one on its own.
	group *Group

	// The loop's mailbox (see leadStep): requests from TryAcquire and
	// Resign, events signalled by timers and Stop, and whether the loop is
	// parked (leading with no goroutine) or over.
	evMu      sync.Mutex
	mailbox   []request
	ls        leadState // the leadership the loop runs; only the loop touches it
	events    loopEvent
	parked    bool
	loopEnded bool
	woken     bool          // the backend pushed a wake-up (backendkit.Notifier)
	loopDone  chan struct{} // closed when the loop ends; made on demand (doneCh)

	// Guarded by mu, like the fields after it.
	started     bool
	stopped     bool
	leaderKnown bool
	listening   bool // the backend is a backendkit.Notifier: Start subscribes
	mu          sync.Mutex
	opCancel    context.CancelFunc // cancels the loop's backend call in flight (opContext; renewals have none)
	listenDone  chan struct{}      // closed when the push subscription is cancelled; made by Stop
	unsub       func()             // the push subscription's cancel, for Stop
	term        *leaderTerm
	finalLease  *Lease // lease to release on Stop, set by the loop on exit
	leader      Lease
	lastContact time.Time
	lastFail    *failure // the last store failure, nil before the first
	// healthErr is the last failed HealthCheck's error, nil after a
	// success; healthCancel and healthDone stop and await the checker
	// (health.go), set by Start when Config.HealthCheck is.
	healthErr    error
	healthCancel context.CancelFunc
	healthDone   chan struct{}
	// incarnation is sent with every Acquire (backendkit.AcquireRequest.Incarnation):
	// random per New and replaced when a leadership this elector announced
	// ends (stepDown), so every announced leadership has a term of its own
	// while a retry after a lost response keeps the term it won.
	incarnation string
	// reqMeta is the metadata sent with every Acquire: Config.Metadata,
	// plus MetaPriority when Config.Priority is not 0.
	reqMeta map[string]string
	// prio is the state of the priority rules (priority.go), made when
	// the elector first sees a candidate of higher priority or, with
	// Config.Preempt, at New.
	prio atomic.Pointer[priorityState]
}

// errUnhealthy is an attempt skipped because Config.HealthCheck says this
// candidate is unhealthy.
var errUnhealthy = errors.New("fxelection: unhealthy: no attempt made")

// failure is a store failure and when it happened (Status.LastError).
type failure struct {
	err error
	at  time.Time
}

type observerEntry struct{ o Observer }

// discardLogger is the logger of electors without Config.Logger, shared.
var discardLogger = slog.New(slog.DiscardHandler)

// New returns an Elector for cfg on backend. It validates cfg (filling in
// defaults), and RenewDeadline against a backend that limits it
// (backendkit.RenewDeadlineLimiter), and returns an error naming the
// first bad field. It does no I/O.
func New(cfg Config, backend Backend) (*Elector, error) {
	if backend == nil {
		return nil, errors.New("fxelection: Backend is required")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if problem := backendkit.RenewDeadlineProblem(backend, cfg.RenewDeadline); problem != "" {
		return nil, &ConfigError{Field: "RenewDeadline", Reason: problem}
	}
	// The caller keeps its map; later changes to it must not reach leases.
	cfg.Metadata = maps.Clone(cfg.Metadata)
	log := discardLogger
	if cfg.Logger != nil {
		log = cfg.Logger.With("election", cfg.Name, "identity", cfg.Identity)
	}
	e := &Elector{
		cfg:     cfg,
		backend: backend,
		kind:    backendkit.Name(backend),
		log:     log,
		mail:    make(chan struct{}, 1),

		incarnation: backendkit.NewIncarnation(),
		reqMeta:     requestMetadata(cfg),
	}
	e.healthy.Store(cfg.Health.Check == nil) // unhealthy until a first check succeeds
	return e, nil
}

// Config returns a copy of the configuration in effect, defaults filled in
// (Status has the election, identity and backend name too).
func (e *Elector) Config() Config {
	c := e.cfg
	c.Metadata = maps.Clone(c.Metadata)
	return c
}

// leaderTerm is one period of leadership. It is also the leader context
// (its methods follow), and its one timer drives both the renewals and the
// renew deadline.
type leaderTerm struct {
	e     *Elector
	lease Lease // the lease as last renewed
	// acquired is the lease as acquired: the leader context's value.
	acquired Lease
	// timer fires at the next renewal (due) or the renew deadline,
	// whichever is earlier; see fire.
	timer     *time.Timer
	armed     time.Time // when timer is set to fire (guarded by Elector.mu)
	lastRenew time.Time // start of the last successful acquire/renew
	since     time.Time // start of the attempt that acquired it
	due       time.Time // when the timer next signals a renewal; zero when none is armed (guarded by Elector.mu)
	ended     bool      // stepDown ran (guarded by Elector.mu)
	expired   bool      // the timer found the renew deadline passed (guarded by Elector.mu)
	// stepMu is held by stepDown while it ends and announces the
	// leadership, so that a concurrent stepDown (the loop's and the
	// timer's) returns only once the announcement is made.
	stepMu sync.Mutex
	// startedDone is closed when OnStartedLeading has returned (nil when
	// there is none): OnStoppedLeading waits for it.
	startedDone chan struct{}

	// The leader context's state.
	cancelled atomic.Bool
	cmu       sync.Mutex
	done      chan struct{} // made by Done on demand
	afters    []*afterFunc  // functions to run when cancelled (AfterFunc)

	// renewal bounds a renewal in flight; unlike the leader context, Stop
	// does not cut it when it begins (see renewalCut).
	renewal renewalCut
}

// deadline is when belief in t ends without a renewal: the start of the
// last successful acquire or renewal plus RenewDeadline.
func (t *leaderTerm) deadline() time.Time { return t.lastRenew.Add(t.e.cfg.RenewDeadline) }

// inflightOp is one backend call of the campaign loop.
type inflightOp struct {
	op    string
	since time.Time
}

// loopEvent is a set of events signalled to the loop.
type loopEvent uint8

const (
	evRenew    loopEvent = 1 << iota // the renewal timer fired
	evDeadline                       // the renew deadline passed
	evStop                           // Stop began (halted)
)

// leadState is what the loop keeps while leading, between the events that
// run it.
type leadState struct {
	t        *leaderTerm
	failures int
	due      time.Time // when the next renewal is due
}

type requestKind int

const (
	reqTryAcquire requestKind = iota
	reqResign
	reqUnhealthy // from the health checker: resign with ReasonUnhealthy
	reqResignTo  // ResignTo: resign, handing the lease to request.to
	reqPreempt   // a preemption request: as reqResignTo, with ReasonPreempted
)

type request struct {
	kind  requestKind
	ctx   context.Context
	reply chan result
	to    string // reqResignTo's successor
}

type result struct {
	leading bool
	err     error
}

// afterFunc is one function registered with a leader context's AfterFunc.
type afterFunc struct{ f func() }

// renewalCut is what a renewal of a leadership in flight waits under,
// besides its own renew deadline: it is cut when the leadership ends
// (endTerm: by the timer at the renew deadline, or a step-down, such as
// Stop's when it gives up on the campaign loop) and when Stop's bound for
// the campaign loop ends, but not when Stop begins. Stop cancels the leader
// context at once but lets a renewal in flight finish: a renewal cut short
// may be applied by the store all the same, and Stop must release the
// lease as the store last wrote it (a store that matches the last write on
// release, as PostgreSQL's expires_at, frees nothing otherwise). Like the
// leader context it has no Done channel: Err and AfterFunc (waitContext)
// are all a renewal needs.
type renewalCut struct {
	mu     sync.Mutex
	cut    bool
	afters []*afterFunc
}

// Err is context.Canceled once the renewal is cut.
func (c *renewalCut) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return context.Canceled
	}
	return nil
}

// AfterFunc arranges for f to run once the renewal is cut (at once, on a
// goroutine of its own, if it already is); stop removes it, reporting
// whether it did so before f was started.
func (c *renewalCut) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.cut {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x == a {
				c.afters = slices.Delete(c.afters, i, i+1)
				if len(c.afters) == 0 {
					c.afters = nil
				}
				return true
			}
		}
		return false
	}
}

// fire cuts the renewal in flight, once: it runs the AfterFunc functions
// (which cancel a direct renewal's context or give up a renewal waiting in
// a batch).
func (c *renewalCut) fire() {
	c.mu.Lock()
	if c.cut {
		c.mu.Unlock()
		return
	}
	c.cut = true
	fs := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, a := range fs {
		a.f()
	}
}

// Group is the elections of one process that share one backend, in the
// spirit of etcd's concurrency.Session: its electors renew in batches (one
// store round trip for many leases, when the backend implements
// backendkit.BatchRenewer) and take their first campaign step on a few
// shared goroutines instead of one each. A process that runs many elections
// on one store makes one Group and creates every elector with Group.New;
// an elector created with New is on its own and renews lease by lease.
//
// A Group holds no goroutine while none of its electors needs one: it needs
// no Close, and it is safe for concurrent use.
type Group struct {
	backend Backend
	kind    string

	mu    sync.Mutex // guards batch and the start queue, and Elector.startState
	batch *batcher   // made by the first elector that starts on a batching store
	start starter
}

// starter is a group's start queue; its fields are guarded by Group.mu.
type starter struct {
	queue    []startTask
	workers  int         // running
	finished uint64      // tasks done, for the stall check
	watch    *time.Timer // the stall check, while armed
	seen     uint64      // finished when it was armed
}

// startTask is one task: e's first step, or, when n is set, its
// subscription to n.
type startTask struct {
	e *Elector
	n backendkit.Notifier
}

// priorityState is an elector's state for the grace rule, made when it
// first sees a candidate of higher priority (most electors never do: it
// costs them nothing).
type priorityState struct {
	mu         sync.Mutex
	higherSeen time.Time // last sight of a candidate of higher priority
	freeSince  time.Time // a grace wait: when the lease was first found free
}
