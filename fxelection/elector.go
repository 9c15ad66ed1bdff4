package fxelection

import (
	"context"
	"errors"
	"fmt"
	"github.com/fxelection/fxelection/fxelection/internal/backoff"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"
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
// A leader waiting for its next renewal holds no goroutine (its
// leadership runs on timer and request events, see run), and electors that
// share a backend implementing BatchRenewer renew in batches, so one
// process can run many elections.
//
// An Elector is safe for concurrent use. Start it once; after Stop it cannot
// be started again.
//
// Its fields are ordered to leave little padding: a process running many
// elections keeps one per election.
type Elector struct {
	cfg     Config
	backend Backend
	kind    string
	log     *slog.Logger

	wake chan struct{}
	// mail carries a token when requests wait in mailbox or events were
	// signalled while the loop runs (not parked).
	mail chan struct{}
	// disp delivers callbacks; created on first use after Start (see
	// callbacks), so an elector whose callbacks never run has none.
	disp atomic.Pointer[dispatcher]
	// batch sends renewals in batches with other electors on the same
	// backend when it implements BatchRenewer (nil otherwise); set by
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
	// subscribed is set once Notifier.Subscribe has returned.
	subscribed atomic.Bool

	// The loop's mailbox (see leadStep): requests from TryAcquire and
	// Resign, events signalled by timers and Stop, and whether the loop is
	// parked (leading with no goroutine) or over.
	evMu      sync.Mutex
	mailbox   []request
	ls        leadState // the leadership the loop runs; only the loop touches it
	events    loopEvent
	parked    bool
	loopEnded bool

	// Guarded by mu, like the fields after it.
	started     bool
	stopped     bool
	leaderKnown bool
	mu          sync.Mutex
	cancel      context.CancelFunc
	loopDone    chan struct{}
	listenDone  chan struct{} // closed when the push subscription is cancelled
	unsub       func()        // the push subscription's cancel, for Stop
	term        *leaderTerm
	finalLease  *Lease // lease to release on Stop, set by the loop on exit
	leader      Lease
	lastContact time.Time
	lastFail    *failure // the last store failure, nil before the first
}

// failure is a store failure and when it happened (Status.LastError).
type failure struct {
	err error
	at  time.Time
}

// leaderTerm is one period of leadership.
type leaderTerm struct {
	lease     Lease
	ctx       context.Context
	cancel    context.CancelFunc
	timer     *time.Timer // cancels ctx at the renew deadline
	lastRenew time.Time   // start of the last successful acquire/renew
	deadline  time.Time   // lastRenew + RenewDeadline
	ended     bool        // stepDown ran (guarded by Elector.mu)
	// startedDone is closed when OnStartedLeading has returned (nil when
	// there is none): OnStoppedLeading waits for it.
	startedDone chan struct{}
}

type observerEntry struct{ o Observer }

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
	evStop                           // the loop's context is done
)

// leadState is what the loop keeps while leading, between the events that
// run it.
type leadState struct {
	ctx      context.Context
	t        *leaderTerm
	failures int
	due      time.Time   // when the next renewal is due
	timer    *time.Timer // fires evRenew at due
}

type requestKind int

const (
	reqTryAcquire requestKind = iota
	reqResign
)

type request struct {
	kind  requestKind
	ctx   context.Context
	reply chan result
}

type result struct {
	leading bool
	err     error
}

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
		kind:    backendName(backend),
		log:     log,
		wake:    make(chan struct{}, 1),
		mail:    make(chan struct{}, 1),
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
			e.recovered(PanicInObserver, v, ev.Kind == EventPanic)
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
	// The loop must outlive Start's context (fx cancels OnStart contexts).
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.started, e.cancel, e.loopDone = true, cancel, make(chan struct{})
	e.canDispatch.Store(true)
	e.batch = joinBatcher(e.backend)
	if n, ok := e.backend.(Notifier); ok {
		e.listenDone = make(chan struct{})
		go e.listen(runCtx, n, e.listenDone)
	}
	go e.run(runCtx)
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
// subscription (Notifier.Subscribe) that has not returned never delays
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
	cancel, loopDone, listenDone := e.cancel, e.loopDone, e.listenDone
	e.mu.Unlock()
	defer leaveBatcher(e.backend, e.batch)

	b := newStopBound(ctx, e.cfg.StopTimeout, e.cfg.RetryPeriod)
	defer b.close()

	cancel()
	e.signal(evStop, false) // a parked leadership wakes to step down
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
	if t == nil || t.ended || t.ctx.Err() != nil || !time.Now().Before(t.deadline) {
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
	// blocks) past the renew deadline: belief has ended (Leading is false,
	// the leader context is cancelled) but the loop has not yet noticed. A
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
		select {
		case <-e.loopDone:
		default:
			s.Running = true
		}
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
	stop := context.AfterFunc(t.ctx, cancel)
	defer stop()
	return true, fn(ContextWithLease(wctx, lease))
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
	loopDone := e.loopDone
	e.mu.Unlock()
	if !running {
		return result{}, ErrNotRunning
	}
	req := request{kind: kind, ctx: ctx, reply: make(chan result, 1)}
	if !e.post(req) {
		return result{}, ErrNotRunning
	}
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

// post puts r in the loop's mailbox and wakes the loop; false if the loop
// has ended.
func (e *Elector) post(r request) bool {
	e.evMu.Lock()
	if e.loopEnded {
		e.evMu.Unlock()
		return false
	}
	e.mailbox = append(e.mailbox, r)
	resume := e.wakeLoop()
	e.evMu.Unlock()
	if resume {
		go e.leadStep()
	}
	return true
}

// signal records ev for the loop and wakes it. inline says the caller is
// a goroutine of its own (a timer's or context.AfterFunc's), which may run
// a parked loop itself instead of starting another.
func (e *Elector) signal(ev loopEvent, inline bool) {
	e.evMu.Lock()
	if e.loopEnded {
		e.evMu.Unlock()
		return
	}
	e.events |= ev
	resume := e.wakeLoop()
	e.evMu.Unlock()
	if resume {
		if inline {
			e.leadStep()
		} else {
			go e.leadStep()
		}
	}
}

// wakeLoop, with evMu held, reports whether the loop is parked (and so
// must be resumed by the caller, which it now owns); otherwise it leaves
// a token in mail for the running loop.
func (e *Elector) wakeLoop() bool {
	if e.parked {
		e.parked = false
		return true
	}
	select {
	case e.mail <- struct{}{}:
	default:
	}
	return false
}

// nextRequest takes the oldest request from the mailbox.
func (e *Elector) nextRequest() (request, bool) {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if len(e.mailbox) == 0 {
		return request{}, false
	}
	r := e.mailbox[0]
	e.mailbox[0] = request{}
	e.mailbox = e.mailbox[1:]
	if len(e.mailbox) == 0 {
		e.mailbox = nil
	} else {
		select {
		case e.mail <- struct{}{}:
		default:
		}
	}
	return r, true
}

// requeue puts requests the leadership did not handle back at the front
// of the mailbox, for the campaign.
func (e *Elector) requeue(rs []request) {
	e.evMu.Lock()
	e.mailbox = append(rs, e.mailbox...)
	select {
	case e.mail <- struct{}{}:
	default:
	}
	e.evMu.Unlock()
}

// endLoop marks the loop over (requests still in the mailbox get
// ErrNotRunning) and closes loopDone.
func (e *Elector) endLoop() {
	e.evMu.Lock()
	e.loopEnded = true
	e.mailbox = nil
	e.evMu.Unlock()
	close(e.loopDone)
}

// poke is the Notifier's wake-up; it never blocks.
func (e *Elector) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// listen runs the push wake-up subscription on a goroutine of its own, so
// that a Subscribe or cancel that blocks (a hung store) can delay neither
// the campaign loop nor Stop. The goroutine ends once Subscribe has
// returned, leaving the cancel for Stop (which runs it on a goroutine of
// its own and closes done after it returns): no goroutine waits for the
// subscription in between. If Subscribe returns after Stop began, the
// subscription is cancelled at once, here.
func (e *Elector) listen(ctx context.Context, n Notifier, done chan struct{}) {
	cancel := n.Subscribe(e.cfg.Name, e.poke)
	if cancel == nil {
		cancel = func() {}
	}
	e.mu.Lock()
	stopping := ctx.Err() != nil // Stop cancels ctx before it looks for unsub
	if !stopping {
		e.unsub = cancel
	}
	e.mu.Unlock()
	e.subscribed.Store(true)
	if stopping {
		defer close(done)
		cancel()
	}
}

// takeUnsubscribe returns the push subscription's cancel for Stop, once.
func (e *Elector) takeUnsubscribe() func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.unsub
	e.unsub = nil
	return u
}

// callbacks returns the elector's callback dispatcher, creating it.
func (e *Elector) callbacks() *dispatcher {
	if d := e.disp.Load(); d != nil {
		return d
	}
	d := newDispatcher(func(where string, v any) { e.recovered(where, v, where == PanicInErrorCallback) })
	if e.disp.CompareAndSwap(nil, d) {
		return d
	}
	return e.disp.Load()
}

// run is the campaign loop: campaign, lead, repeat. One goroutine at a
// time runs it and owns all timing, but no goroutine waits while it leads:
// campaign blocks on a goroutine as before, while a leadership parks (see
// leadStep) and is resumed, on a goroutine of its own, by its renewal
// timer, its renew deadline, Stop, or a request (TryAcquire, Resign).
func (e *Elector) run(ctx context.Context) { e.loop(ctx, 0) }

// loop campaigns (after sitting out sitOut), then starts leading and parks.
func (e *Elector) loop(ctx context.Context, sitOut time.Duration) {
	lease, start, pending, ok := e.campaign(ctx, sitOut)
	if !ok {
		e.endLoop()
		return
	}
	e.startLead(ctx, lease, start, pending)
	e.leadStep()
}

// afterLead goes on from a leadership that ended for reason: campaign
// again, or end the loop.
func (e *Elector) afterLead(ctx context.Context, reason StopReason) {
	if e.ls.timer != nil {
		e.ls.timer.Stop()
	}
	e.ls = leadState{}
	if reason == ReasonStopped || ctx.Err() != nil || e.cfg.NoRecampaign {
		e.endLoop()
		return
	}
	var sitOut time.Duration
	if reason == ReasonResigned {
		sitOut = 2 * e.cfg.RetryPeriod
	}
	e.loop(ctx, sitOut)
}

// campaign tries to acquire until it succeeds (ok) or ctx is done. sitOut
// delays the first attempt and ignores wake-ups until it has passed.
//
// The waiting between attempts is in pause, and attempt keeps the backend
// call apart from what follows it, so that a campaign goroutine waiting in
// the backend has a small stack: at start-up every elector's campaign waits
// there at once.
func (e *Elector) campaign(ctx context.Context, sitOut time.Duration) (lease Lease, start time.Time, pending *request, ok bool) {
	delay, failures := sitOut, 0
	ignoreWakeUntil := time.Now().Add(sitOut)
	for {
		if delay > 0 {
			req, stopped := e.pause(ctx, delay, ignoreWakeUntil)
			if stopped {
				return Lease{}, time.Time{}, nil, false
			}
			if req != nil {
				s, err := e.attempt(ctx, &lease)
				if err == nil && ctx.Err() != nil {
					e.dropLate(ctx, lease)
					req.reply <- result{}
					return Lease{}, time.Time{}, nil, false
				}
				if err == nil {
					return lease, s, req, true
				}
				if isStoreFailure(err) {
					req.reply <- result{err: err}
				} else {
					req.reply <- result{}
				}
				continue // keep the current delay schedule
			}
		}
		s, err := e.attempt(ctx, &lease)
		switch {
		case err == nil && ctx.Err() != nil:
			e.dropLate(ctx, lease)
			return Lease{}, time.Time{}, nil, false
		case err == nil:
			return lease, s, nil, true
		case ctx.Err() != nil:
			return Lease{}, time.Time{}, nil, false
		case isStoreFailure(err):
			failures++
			delay = e.backoff(failures)
		default:
			failures = 0
			delay = backoff.Jitter(e.cfg.RetryPeriod)
		}
	}
}

// pause waits delay before the campaign's next attempt. It ends early on a
// wake-up (once ignoreWakeUntil has passed) or a TryAcquire, which it
// returns for an attempt now; a Resign is answered at once (a follower has
// nothing to resign). stopped reports that ctx is done.
func (e *Elector) pause(ctx context.Context, delay time.Duration, ignoreWakeUntil time.Time) (req *request, stopped bool) {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, true
		case <-timer.C:
			return nil, false
		case <-e.wake:
			if !time.Now().Before(ignoreWakeUntil) {
				return nil, false
			}
		case <-e.mail:
			r, ok := e.nextRequest()
			if !ok {
				continue
			}
			if r.kind == reqResign {
				r.reply <- result{}
				continue
			}
			return &r, false
		}
	}
}

// attempt makes one Acquire call, stores the lease won in *won (the zero
// Lease otherwise) and records what it learned. The call is bounded by
// RenewDeadline: a lease won after that long would have to be given up at
// once (belief is measured from the attempt's start), and a hung store
// must not keep the loop from TryAcquire, Resign or Stop.
func (e *Elector) attempt(ctx context.Context, won *Lease) (time.Time, error) {
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	end := e.during(OpAcquire)
	l, err := e.backend.Acquire(actx, AcquireRequest{
		Election: e.cfg.Name, Identity: e.cfg.Identity, Metadata: e.cfg.Metadata, Duration: e.cfg.LeaseDuration,
	})
	end()
	cancel()
	*won = l
	return start, e.attempted(ctx, start, won, err)
}

// attempted records the outcome of the attempt that started at start:
// err from Acquire (nil when *won is the lease won). It returns the error
// for the campaign (ctx's when ctx is done) and clears *won on an error.
func (e *Elector) attempted(ctx context.Context, start time.Time, won *Lease, err error) error {
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: OpAcquire, Duration: time.Since(start), Err: err})
	if err != nil {
		*won = Lease{}
	}
	var held *HeldError
	switch {
	case err == nil:
		e.contact()
		return nil
	case errors.As(err, &held):
		e.contact()
		e.observeLeader(held.Holder)
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		e.fail(OpAcquire, err)
		return err
	}
}

// during records that the loop is in backend operation op until the
// returned function is called.
func (e *Elector) during(op string) (end func()) {
	e.inflight.Store(&inflightOp{op: op, since: time.Now()})
	return func() { e.inflight.Store(nil) }
}

// dropLate gives back a lease acquired just as the elector was stopped,
// without announcing it: nobody was told it led, so nobody must be told it
// stopped. KeepLeaseOnStop leaves it to expire.
func (e *Elector) dropLate(ctx context.Context, l Lease) {
	if e.cfg.KeepLeaseOnStop {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RetryPeriod)
	defer cancel()
	end := e.during(OpRelease)
	_ = e.release(rctx, l) // reported by release
	end()
}

// startLead announces a new leadership and arms its first renewal.
//
// From here the leadership runs on events (leadStep), not on a waiting
// goroutine: a leader that is only waiting for its next renewal costs a
// timer, not a goroutine and its stack, which matters to processes that
// run many elections.
func (e *Elector) startLead(ctx context.Context, lease Lease, start time.Time, pending *request) {
	t := e.becomeLeader(ctx, lease, start)
	if pending != nil {
		pending.reply <- result{leading: true}
	}
	// The first renewal comes at a random point of the first retry period,
	// so that elections acquired together spread out; later ones follow the
	// last success by RetryPeriod (rounded down to the batch grid when the
	// backend batches), keeping that phase.
	e.ls = leadState{ctx: ctx, t: t}
	e.ls.timer = time.AfterFunc(time.Hour, func() { e.signal(evRenew, true) })
	e.armRenewal(start.Add(firstRenewal(e.cfg.RetryPeriod)))
}

// armRenewal sets the next renewal for due.
func (e *Elector) armRenewal(due time.Time) {
	e.ls.due = due
	e.ls.timer.Reset(time.Until(due))
}

// leadStep runs the leadership's events until none is left, then parks
// (returns, leaving no goroutine) until signal or post resumes it; when
// the leadership ends it goes on with afterLead on the same goroutine.
// Exactly one goroutine runs it at a time: the one that found the loop
// parked.
func (e *Elector) leadStep() {
	for {
		e.evMu.Lock()
		ev, reqs := e.events, e.mailbox
		e.events, e.mailbox = 0, nil
		if ev == 0 && len(reqs) == 0 {
			e.parked = true
			e.evMu.Unlock()
			return
		}
		e.evMu.Unlock()
		ctx := e.ls.ctx
		reason, ended, rest := e.leadEvents(ev, reqs)
		if ended {
			if len(rest) > 0 {
				e.requeue(rest)
			}
			e.afterLead(ctx, reason)
			return
		}
	}
}

// leadEvents handles one set of events for the leadership: Stop, the
// renew deadline, requests in order, the renewal timer. ended reports that
// the leadership ended and why; rest are the requests it left for the
// campaign.
func (e *Elector) leadEvents(ev loopEvent, reqs []request) (reason StopReason, ended bool, rest []request) {
	ctx, t := e.ls.ctx, e.ls.t
	if ctx.Err() != nil {
		return e.stepDown(t, ReasonStopped, true), true, reqs
	}
	if t.ctx.Err() != nil {
		return e.stepDown(t, ReasonDeadline, false), true, reqs
	}
	for i, r := range reqs {
		if r.kind == reqTryAcquire {
			r.reply <- result{leading: true}
			continue
		}
		return e.resign(ctx, t, r), true, reqs[i+1:]
	}
	if ev&evRenew != 0 && !time.Now().Before(e.ls.due) {
		if reason, ended := e.renew(ctx, t); ended {
			return reason, true, nil
		}
	}
	return "", false, nil
}

// renewDue returns when a renewal that follows from by after is due. With
// a batching backend it is rounded down to the batch grid (renewSlot): a
// renewal may come up to RetryPeriod/64 early so that it shares a round
// trip, never later than it would without batching.
func (e *Elector) renewDue(from time.Time, after time.Duration) time.Time {
	due := from.Add(after)
	if e.batch != nil {
		due = renewSlot(due, e.cfg.RetryPeriod)
	}
	return due
}

// resign is the leadership's answer to Resign (request r): end the
// leadership, wait for leader work, release the lease.
func (e *Elector) resign(ctx context.Context, t *leaderTerm, r request) StopReason {
	e.stepDown(t, ReasonResigned, false)
	select {
	case <-e.work.wait():
	case <-r.ctx.Done():
	case <-ctx.Done():
	}
	// Bounded, and cut short by Stop: a hung store must not keep
	// the loop (and so Stop) waiting on the caller's context.
	rctx, cancel := context.WithTimeout(r.ctx, e.cfg.RenewDeadline)
	stop := context.AfterFunc(ctx, cancel)
	end := e.during(OpRelease)
	err := e.release(rctx, t.lease)
	end()
	stop()
	cancel()
	r.reply <- result{err: err}
	return ReasonResigned
}

// renew makes one renewal of t (through the batcher when the backend
// batches) and arms the next; ended reports that the leadership ended, and
// why.
//
// The call and what follows it are in functions of their own (renewDirect,
// renewed), so that a renewal waiting for its batch keeps a small stack:
// many wait at once in a process with many elections.
func (e *Elector) renew(ctx context.Context, t *leaderTerm) (reason StopReason, ended bool) {
	renewStart := time.Now()
	end := e.during(OpRenew)
	var (
		l        Lease
		err      error
		timedOut bool // the renew deadline ended the call
	)
	if e.batch != nil {
		// The leader context is done at the renew deadline and on Stop:
		// no context of its own is needed per renewal.
		err = e.batch.renew(t.ctx, t.deadline, &t.lease, &l)
		timedOut = errors.Is(err, context.DeadlineExceeded)
	} else {
		timedOut, err = e.renewDirect(ctx, t, &l)
	}
	end()
	return e.renewed(ctx, t, renewStart, &l, err, timedOut)
}

// renewDirect renews t with Backend.Renew, bounded by its renew deadline,
// storing the renewed lease in *out; timedOut reports that the deadline
// ended the call.
func (e *Elector) renewDirect(ctx context.Context, t *leaderTerm, out *Lease) (timedOut bool, err error) {
	rctx, cancel := context.WithDeadline(ctx, t.deadline)
	defer cancel()
	*out, err = e.backend.Renew(rctx, t.lease)
	return rctx.Err() != nil && errors.Is(err, context.DeadlineExceeded), err
}

// renewed handles the outcome of t's renewal that started at renewStart:
// the renewed lease *l when err is nil.
func (e *Elector) renewed(ctx context.Context, t *leaderTerm, renewStart time.Time, l *Lease, err error, timedOut bool) (reason StopReason, ended bool) {
	err = redactErr(err)
	took := time.Since(renewStart)
	e.observe(Event{Kind: EventOperation, Op: OpRenew, Duration: took, Err: err})
	switch {
	case err == nil:
		e.contact()
		if !e.extend(t, *l, renewStart) {
			return e.stepDown(t, ReasonDeadline, false), true
		}
		e.ls.failures = 0
		e.armRenewal(e.renewDue(renewStart, e.cfg.RetryPeriod))
	case errors.Is(err, ErrLeaseLost):
		e.contact()
		return e.stepDown(t, ReasonLost, false), true
	case ctx.Err() != nil:
		return e.stepDown(t, ReasonStopped, true), true
	default:
		if timedOut {
			e.fail(OpRenew, fmt.Errorf("renew did not finish before the renew deadline: %w", err))
		} else {
			e.fail(OpRenew, err)
		}
		e.ls.failures++
		// Retry sooner than RetryPeriod: the deadline is running out.
		wait := min(e.cfg.RetryPeriod, backoff.Jitter(e.cfg.RetryPeriod/4<<min(e.ls.failures-1, 4)))
		e.armRenewal(time.Now().Add(wait))
	}
	return "", false
}

// becomeLeader records a new leadership and announces it.
func (e *Elector) becomeLeader(ctx context.Context, lease Lease, start time.Time) *leaderTerm {
	tctx, cancel := context.WithCancel(ctx)
	t := &leaderTerm{
		lease: lease, ctx: ContextWithLease(tctx, lease.Clone()), cancel: cancel,
		lastRenew: start, deadline: start.Add(e.cfg.RenewDeadline),
	}
	// The timer, not the loop, ends belief at the deadline: a backend call
	// that ignores its context cannot stretch leadership. It also wakes a
	// parked loop to step down.
	t.timer = time.AfterFunc(time.Until(t.deadline), func() {
		cancel()
		e.signal(evDeadline, true)
	})

	e.mu.Lock()
	e.term = t
	e.finalLease = nil
	e.mu.Unlock()
	e.observeLeader(lease)
	e.log.Info("leadership acquired", "term", lease.Term)
	e.observe(Event{Kind: EventStartedLeading, Lease: lease.Clone()})

	run := e.cfg.Callbacks.OnStartedLeading
	if run == nil {
		// Nothing to run: no callback goroutine to start, and nothing for
		// OnStoppedLeading to wait for (startedDone stays nil).
		return t
	}
	t.startedDone = make(chan struct{})
	e.work.add()
	queued := e.callbacks().enqueue(PanicInStartedLeading, func() {
		// Wait until the goroutine runs the callback, so that no later
		// callback can overtake its start.
		began := make(chan struct{})
		go func() {
			defer e.work.done()
			defer close(t.startedDone)
			defer func() {
				if v := recover(); v != nil {
					e.recovered(PanicInStartedLeading, v, false)
				}
			}()
			close(began)
			run(t.ctx)
		}()
		<-began
	}, false)
	if !queued {
		close(t.startedDone)
		e.work.done()
	}
	return t
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

// extend records a successful renewal started at start; false if the
// deadline timer already fired (belief has ended, so leadership must too).
func (e *Elector) extend(t *leaderTerm, l Lease, start time.Time) bool {
	if !t.timer.Stop() {
		return false
	}
	margin := e.cfg.LeaseDuration - time.Since(t.lastRenew)
	e.mu.Lock()
	if t.ended { // Stop ended it while the renewal ran
		e.mu.Unlock()
		return false
	}
	t.lease, t.lastRenew, t.deadline = l, start, start.Add(e.cfg.RenewDeadline)
	e.mu.Unlock()
	t.timer.Reset(time.Until(t.deadline))
	e.observe(Event{Kind: EventRenewed, Lease: l.Clone(), Margin: margin})
	return true
}

// stepDown ends leadership t and announces it, once: later calls for the
// same t do nothing. keep marks the lease for release by Stop.
func (e *Elector) stepDown(t *leaderTerm, reason StopReason, keep bool) StopReason {
	t.timer.Stop()
	t.cancel()
	e.mu.Lock()
	if t.ended {
		e.mu.Unlock()
		return reason
	}
	t.ended = true
	if e.term == t {
		e.term = nil
	}
	e.leader, e.leaderKnown = Lease{}, false
	if keep {
		final := t.lease
		e.finalLease = &final
	}
	e.mu.Unlock()
	level := slog.LevelWarn
	if reason == ReasonStopped || reason == ReasonResigned {
		level = slog.LevelInfo
	}
	e.log.Log(context.Background(), level, "leadership lost", "term", t.lease.Term, "reason", string(reason))
	e.observe(Event{Kind: EventStoppedLeading, Lease: t.lease.Clone(), Reason: reason})
	if cb := e.cfg.Callbacks.OnStoppedLeading; cb != nil {
		l := t.lease.Clone()
		e.callbacks().enqueue(PanicInStoppedLeading, func() {
			e.awaitStarted(t)
			cb(l, reason)
		}, false)
	}
	return reason
}

// release gives the lease back, reporting a store failure.
func (e *Elector) release(ctx context.Context, l Lease) error {
	start := time.Now()
	err := redactErr(e.backend.Release(ctx, l))
	e.observe(Event{Kind: EventOperation, Op: OpRelease, Duration: time.Since(start), Err: err})
	if err != nil {
		e.fail(OpRelease, err)
		return &OpError{Election: e.cfg.Name, Op: OpRelease, Err: err}
	}
	e.contact()
	e.log.Debug("lease released", "term", l.Term)
	return nil
}

// observeLeader records the leader seen in the store and announces changes.
func (e *Elector) observeLeader(l Lease) {
	e.mu.Lock()
	changed := !e.leaderKnown || e.leader.Holder != l.Holder || e.leader.Term != l.Term
	e.leader, e.leaderKnown = l.Clone(), true
	e.mu.Unlock()
	if !changed {
		return
	}
	e.log.Debug("leader observed", "leader", l.Holder, "term", l.Term)
	e.observe(Event{Kind: EventNewLeader, Lease: l.Clone()})
	if cb := e.cfg.Callbacks.OnNewLeader; cb != nil {
		l = l.Clone()
		e.callbacks().enqueue(PanicInNewLeader, func() { cb(l) }, true)
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
		e.callbacks().enqueue(PanicInErrorCallback, func() { cb(oe) }, true)
	}
}

// backoff is the follower's wait after n consecutive store failures:
// RetryPeriod doubling per failure, capped at MaxBackoff, jittered (never
// beyond MaxBackoff).
func (e *Elector) backoff(n int) time.Duration {
	return min(backoff.Delay(n, e.cfg.RetryPeriod, e.cfg.MaxBackoff), e.cfg.MaxBackoff)
}
