package fxelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	// halted is set by Stop (with mu held) before anything else it does:
	// the campaign loop ends, its backend call in flight is cancelled
	// (opCancel) and so is the leader context.
	halted atomic.Bool
	// startState says where the campaign's first step is (guarded by
	// group.mu): see startCampaign.
	startState uint8
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
	opCancel    context.CancelFunc // cancels the loop's backend call in flight (opContext)
	listenDone  chan struct{}      // closed when the push subscription is cancelled; made by Stop
	unsub       func()             // the push subscription's cancel, for Stop
	term        *leaderTerm
	finalLease  *Lease // lease to release on Stop, set by the loop on exit
	leader      Lease
	lastContact time.Time
	lastFail    *failure // the last store failure, nil before the first
	// incarnation is sent with every Acquire (backendkit.AcquireRequest.Incarnation):
	// random per New and replaced when a leadership this elector announced
	// ends (stepDown), so every announced leadership has a term of its own
	// while a retry after a lost response keeps the term it won.
	incarnation string
}

// failure is a store failure and when it happened (Status.LastError).
type failure struct {
	err error
	at  time.Time
}

type observerEntry struct{ o Observer }

// discardLogger is the logger of electors without Config.Logger, shared.
var discardLogger = slog.New(slog.DiscardHandler)

// New returns an Elector for cfg on backend. It validates cfg (filling in
// defaults) and returns an error naming the first bad field. It does no I/O.
func New(cfg Config, backend Backend) (*Elector, error) {
	if backend == nil {
		return nil, errors.New("fxelection: Backend is required")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
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
	}
	return e, nil
}

// Config returns a copy of the configuration in effect, defaults filled in
// (Status has the election, identity and backend name too).
func (e *Elector) Config() Config {
	c := e.cfg
	c.Metadata = maps.Clone(c.Metadata)
	return c
}

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

// Start begins campaigning in the background and returns at once. Calling it
// again while running does nothing; after Stop it returns ErrStopped.
func (e *Elector) Start(ctx context.Context) error {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.stopped:
		return ErrStopped
	case e.started:
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The loop must outlive Start's context (fx cancels OnStart contexts):
	// Stop ends it (halted).
	e.base = context.WithoutCancel(ctx)
	e.started = true
	e.canDispatch.Store(true)
	if e.group != nil {
		e.batch = e.group.batcher()
	}
	n, ok := e.backend.(backendkit.Notifier)
	e.listening = ok
	startCampaign(e, n)
	e.log.Debug("elector started")
	return nil
}

// Stop ends campaigning. If leading, it cancels the leader context, waits for
// leader work (OnStartedLeading, RunIfLeader) to return, then releases the
// lease so another candidate leads at once (unless KeepLeaseOnStop), and
// delivers the callbacks already queued.
//
// The bound: Stop's deadline is ctx's or StopTimeout from the call,
// whichever is earlier; waiting for leader work ends there. Once it has
// passed, what remains (the campaign loop's exit when ctx was already done,
// the release, queued callbacks) shares one grace period of at most
// RetryPeriod, so that the lease is not lost merely because shutdown was
// slow or ctx was already done. Each step also allows 10ms, once its bound
// has passed, for what it waited on to notice and finish. Stop therefore
// returns within its deadline plus at most one RetryPeriod and a few tens of
// milliseconds, even when the backend ignores its context and a call never
// returns.
//
// What it leaves behind: a campaign loop that has not returned by the
// deadline (stuck in a backend call that ignores its context, or in an
// Observer that blocks) is left to finish on its own: its goroutine ends
// when the call returns, and observers hear nothing from it after
// EventDetached. The leadership ends at once all the same (the leader
// context is cancelled, OnStoppedLeading is queued) and the lease, not
// released, expires after LeaseDuration. Leader work, a release or callbacks
// still running after their bound are left to return. Each is logged once
// and named in the returned error (for example "fxelection: stop: backend
// renew call still running: context deadline exceeded"). A push
// subscription (backendkit.Notifier.Subscribe) that has not returned never delays
// Stop: it is cancelled as soon as it returns.
//
// Stop is idempotent; it returns nil when everything finished in time and
// the release (if any) succeeded.
func (e *Elector) Stop(ctx context.Context) error {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	e.mu.Lock()
	if e.stopped || !e.started {
		e.stopped = true
		e.mu.Unlock()
		return nil
	}
	e.stopped = true
	if e.listening {
		e.listenDone = make(chan struct{})
	}
	listenDone := e.listenDone
	// From here the loop ends: its backend call in flight is cancelled,
	// and so is the leader context.
	e.halted.Store(true)
	opCancel, t := e.opCancel, e.term
	e.mu.Unlock()

	b := newStopBound(ctx, e.cfg.StopTimeout, e.cfg.RetryPeriod)
	defer b.close()

	if opCancel != nil {
		opCancel()
	}
	if t != nil {
		t.cancel()
	}
	if withdrawStart(e) {
		e.endLoop() // its first step had not begun: there is no loop to wait for
	}
	e.signal(evStop, false) // a parked leadership wakes to step down
	loopDone := e.doneCh()
	if unsub := e.takeUnsubscribe(); unsub != nil {
		go func() {
			defer close(listenDone)
			unsub()
		}()
	}
	var errs []error
	if lctx := b.ctx(); !waitFor(lctx, loopDone) {
		errs = append(errs, e.abandonLoop(lctx.Err()))
	}
	// Leader work gets the deadline, not the grace period: that is kept for
	// the release.
	if !waitFor(b.soft, e.work.wait()) {
		e.log.Warn("leader work did not return before the stop deadline")
		errs = append(errs, fmt.Errorf("fxelection: stop: leader work (OnStartedLeading or RunIfLeader) still running: %w", b.soft.Err()))
	}

	e.mu.Lock()
	final := e.finalLease
	e.mu.Unlock()
	if final != nil && !final.IsZero() && !e.cfg.KeepLeaseOnStop {
		if err := e.stopRelease(b.ctx(), *final); err != nil {
			errs = append(errs, err)
		}
	}
	if lctx := b.ctx(); listenDone != nil && e.subscribed.Load() && !waitFor(lctx, listenDone) {
		e.log.Warn("push listener cancel did not return before the stop deadline")
		errs = append(errs, fmt.Errorf("fxelection: stop: push listener cancel still running: %w", lctx.Err()))
	}
	e.detached.Store(true)
	e.broadcast(Event{Kind: EventDetached})
	if dctx := b.ctx(); !waitFor(dctx, e.callbacks().closed()) {
		e.log.Warn("callbacks still running at the stop deadline")
		errs = append(errs, fmt.Errorf("fxelection: stop: callbacks still running: %w", dctx.Err()))
	}
	e.log.Debug("elector stopped")
	return errors.Join(errs...)
}

// stopBound is Stop's bound: the deadline (ctx's or StopTimeout), then one
// grace period that starts when a step first finds the deadline passed.
type stopBound struct {
	parent      context.Context
	soft        context.Context
	cancelSoft  context.CancelFunc
	graceLen    time.Duration
	grace       context.Context
	cancelGrace context.CancelFunc
}

func newStopBound(ctx context.Context, timeout, grace time.Duration) *stopBound {
	soft, cancel := context.WithTimeout(ctx, timeout)
	return &stopBound{parent: ctx, soft: soft, cancelSoft: cancel, graceLen: grace}
}

// ctx returns the context bounding the next step: the deadline while it has
// not passed, the grace period after. Only Stop's goroutine calls it.
func (b *stopBound) ctx() context.Context {
	if b.soft.Err() == nil {
		return b.soft
	}
	if b.grace == nil {
		b.grace, b.cancelGrace = context.WithTimeout(context.WithoutCancel(b.parent), b.graceLen)
	}
	return b.grace
}

func (b *stopBound) close() {
	b.cancelSoft()
	if b.cancelGrace != nil {
		b.cancelGrace()
	}
}

// waitFor waits until ch is closed or ctx is done and reports whether ch
// closed; it prefers ch when both are ready, and once ctx is done it still
// gives ch stopGrace to close (a goroutine that was about to finish, or a
// backend call noticing its context).
func waitFor(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-ch:
		return true
	case <-grace.C:
		return false
	}
}

// abandonLoop is Stop giving up on a campaign loop that did not return by
// the stop deadline (a backend call that ignores its context): the loop is
// left to finish on its own, and the leadership, if any, ends now.
func (e *Elector) abandonLoop(cause error) error {
	what := "campaign loop still running"
	if in := e.inflight.Load(); in != nil {
		what = "backend " + in.op + " call still running"
	}
	e.log.Warn("stop deadline passed; leaving the campaign loop to finish on its own", "still_running", what)
	e.mu.Lock()
	t := e.term
	e.mu.Unlock()
	if t != nil {
		// The store does not answer: do not try to release (the lease
		// expires); end belief and deliver OnStoppedLeading now.
		e.stepDown(t, ReasonStopped, false)
	}
	return fmt.Errorf("fxelection: stop: %s: %w", what, cause)
}

// stopRelease releases final for Stop within ctx (Stop's bound). The call
// runs on its own goroutine so that a backend ignoring its context cannot
// hold Stop past that bound.
func (e *Elector) stopRelease(ctx context.Context, final Lease) error {
	done := make(chan error, 1)
	go func() { done <- e.release(ctx, final) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// A backend that honours its context returns at once now.
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-grace.C:
		e.log.Warn("release did not return before the stop deadline; leaving it to finish on its own")
		return fmt.Errorf("fxelection: stop: backend release call still running: %w", ctx.Err())
	}
}

// stopGrace is how long Stop waits, once a step's bound has passed, for
// what it waited on to finish anyway (a backend call that honours its
// context returns at once then).
const stopGrace = 10 * time.Millisecond

// IsLeader reports whether this candidate leads now: it holds the lease and
// its last successful renewal started less than RenewDeadline ago.
func (e *Elector) IsLeader() bool {
	_, ok := e.Lease()
	return ok
}

// Lease returns the lease this candidate holds while it is leader.
func (e *Elector) Lease() (Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.believed()
	if t == nil {
		return Lease{}, false
	}
	return t.lease.Clone(), true
}

// believed returns the current leadership if this candidate still believes
// in it: held, not ended, and its renew deadline not yet passed (even if the
// deadline timer has not fired yet). Called with e.mu held.
func (e *Elector) believed() *leaderTerm {
	t := e.term
	if t == nil || t.ended || t.cancelled.Load() || !time.Now().Before(t.deadline()) {
		return nil
	}
	return t
}

// Leader returns the current leader as last seen by this candidate — itself
// while leading, otherwise the holder the store reported at the last attempt
// — and false when unknown (before the first answer, or right after losing).
func (e *Elector) Leader() (Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader.Clone(), e.leaderKnown
}

// Status is a snapshot of an elector for health checks and dashboards.
type Status struct {
	Election string
	Identity string
	Backend  string
	// Running is true between Start and Stop while the campaign loop runs.
	Running bool
	// Leading is true while this candidate leads: exactly when IsLeader
	// would say so (the lease is held and the last successful renewal
	// started less than RenewDeadline ago).
	Leading bool
	// Holding is true from an acquisition until the campaign loop has
	// stepped down. It differs from Leading only while the loop is stuck
	// (in a backend call that ignores its context, or in an Observer that
	// blocks) past the renew deadline: the leadership has ended (Leading is
	// false, the leader context is cancelled, OnStoppedLeading is queued
	// and the step-down logged) but the loop has not yet noticed. A
	// liveness probe looks for that.
	Holding bool
	// Lease is this candidate's lease while Leading.
	Lease Lease
	// Leader is the leader last seen; LeaderKnown says whether there is one.
	Leader      Lease
	LeaderKnown bool
	// LastRenew is the start of the last successful acquire or renewal while
	// Holding.
	LastRenew time.Time
	// LastContact is when the store last answered an operation (any outcome
	// but a store failure).
	LastContact time.Time
	// LastError is the last store failure (an *OpError whose message has
	// passed through backendkit.RedactError) and LastErrorAt when it happened.
	LastError   error
	LastErrorAt time.Time
	// InFlight is the backend operation ("acquire", "renew", "release") the
	// campaign loop is waiting for, "" when none, and InFlightSince when
	// that call began. The elector bounds every call by its context
	// (RenewDeadline at most), so a call in flight for much longer means
	// the backend ignores its context and the loop is wedged: leadership
	// has ended (the renew deadline timer does not depend on the loop), but
	// no campaign goes on until the call returns.
	InFlight      string
	InFlightSince time.Time
	// LeaseDuration, RenewDeadline and RetryPeriod are the effective timings.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Status returns a snapshot of the elector's state.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Status{
		Election: e.cfg.Name, Identity: e.cfg.Identity, Backend: e.kind,
		Leader: e.leader.Clone(), LeaderKnown: e.leaderKnown,
		LastContact:   e.lastContact,
		LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline, RetryPeriod: e.cfg.RetryPeriod,
	}
	if e.started && !e.stopped {
		e.evMu.Lock()
		s.Running = !e.loopEnded
		e.evMu.Unlock()
	}
	if f := e.lastFail; f != nil {
		s.LastError, s.LastErrorAt = f.err, f.at
	}
	if t := e.term; t != nil {
		s.Holding, s.LastRenew = true, t.lastRenew
	}
	if t := e.believed(); t != nil {
		s.Leading, s.Lease = true, t.lease.Clone()
	}
	if in := e.inflight.Load(); in != nil {
		s.InFlight, s.InFlightSince = in.op, in.since
	}
	return s
}

// RunIfLeader runs fn only if this candidate leads, and reports whether it
// ran. fn's context is cancelled the moment leadership ends (or ctx is done)
// and carries the lease for fencing (LeaseFromContext). Stop waits for fn to
// return before releasing the lease.
func (e *Elector) RunIfLeader(ctx context.Context, fn func(ctx context.Context) error) (ran bool, err error) {
	e.mu.Lock()
	t := e.believed()
	if t == nil {
		e.mu.Unlock()
		return false, nil
	}
	lease := t.lease.Clone()
	e.work.add()
	e.mu.Unlock()
	defer e.work.done()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := t.AfterFunc(cancel)
	defer stop()
	return true, fn(backendkit.ContextWithLease(wctx, lease))
}

// TryAcquire makes one attempt to acquire the lease now, without waiting for
// the next retry, and reports whether this candidate leads afterwards. The
// elector must be running. A lease held by someone else is not an error.
func (e *Elector) TryAcquire(ctx context.Context) (bool, error) {
	r, err := e.send(ctx, reqTryAcquire)
	if err != nil {
		return false, err
	}
	return r.leading, r.err
}

// Resign gives up leadership now: it cancels the leader context, waits for
// leader work (bounded by ctx), releases the lease and sits out two retry
// periods so another candidate can take over. It does nothing if this
// candidate does not lead.
func (e *Elector) Resign(ctx context.Context) error {
	r, err := e.send(ctx, reqResign)
	if err != nil {
		return err
	}
	return r.err
}

func (e *Elector) send(ctx context.Context, kind requestKind) (result, error) {
	e.mu.Lock()
	running := e.started && !e.stopped
	e.mu.Unlock()
	if !running {
		return result{}, ErrNotRunning
	}
	req := request{kind: kind, ctx: ctx, reply: make(chan result, 1)}
	if !e.post(req) {
		return result{}, ErrNotRunning
	}
	loopDone := e.doneCh()
	select {
	case r := <-req.reply:
		return r, nil
	case <-ctx.Done():
		return result{}, ctx.Err()
	case <-loopDone:
		// The loop answers every request it took before it ends.
		select {
		case r := <-req.reply:
			return r, nil
		default:
			return result{}, ErrNotRunning
		}
	}
}
