package fxelection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

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
	for _, p := range e.pol.lives {
		p.start(e)
	}
	startCampaign(e, n)
	e.log.Debug("elector started")
	return nil
}

// Stop ends campaigning. If leading, it cancels the leader context, waits for
// leader work (OnStartedLeading, RunIfLeader) to return, then releases the
// lease so another candidate leads at once (unless KeepLeaseOnStop), and
// delivers the callbacks already queued.
//
// Leader work is told at once: the leader context is cancelled and
// IsLeader reports false as soon as Stop begins. A renewal in flight,
// though, is not cancelled but let finish, bounded by its own renew
// deadline and by Stop's wait for the campaign loop (below: its deadline,
// or the grace period when ctx was already done), and the lease released
// is the one it returned: a renewal cut short may be applied by the store
// all the same, and a store that matches the last write on release
// (PostgreSQL matches expires_at, so that a delayed release cannot free a
// later acquisition) would then free nothing, leaving the next leader to
// wait out the lease. So EventStoppedLeading and OnStoppedLeading come
// when that renewal has finished, not when Stop begins. A renewal still
// running when that wait ends is cut (its context is cancelled; in a Group
// it is given up): if the loop then returns, the lease is released as last
// known; if not, see below. An acquisition in flight is cancelled at once.
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
	// From here the loop ends: its backend call in flight is cancelled
	// (a renewal is let finish, see below), and so is the leader context.
	e.halted.Store(true)
	opCancel, t := e.opCancel, e.term
	e.mu.Unlock()

	b := newStopBound(ctx, e.cfg.StopTimeout, e.cfg.RetryPeriod)
	defer b.close()

	if opCancel != nil {
		opCancel()
	}
	if t != nil {
		t.Cancel()
	}
	if withdrawStart(e) {
		e.endLoop() // its first step had not begun: there is no loop to wait for
	}
	if e.signal(evStop) { // a parked leadership wakes to step down
		go e.leadStep()
	}
	loopDone := e.doneCh()
	type policyWork struct {
		done <-chan struct{}
		what string
	}
	var policyDone []policyWork
	for _, p := range e.pol.lives {
		if done, what := p.stop(e); done != nil {
			policyDone = append(policyDone, policyWork{done, what})
		}
	}
	if unsub := e.takeUnsubscribe(); unsub != nil {
		go func() {
			defer close(listenDone)
			unsub()
		}()
	}
	var errs []error
	// A renewal in flight is not cancelled (opCancel is an acquisition's,
	// a release's or a hand-over's) but let finish, so that the loop
	// records the lease as the store wrote it and the release below
	// matches it: a renewal cut short may be applied all the same, and a
	// store that matches the last write on release (PostgreSQL's
	// expires_at) would then free nothing. It is cut when this wait's
	// bound ends (and by its own renew deadline, by the term's timer).
	var cut func()
	if t != nil {
		cut = t.Renewal.Fire
	}
	if lctx := b.ctx(); !waitFor(lctx, loopDone, cut) {
		errs = append(errs, e.abandonLoop(lctx.Err()))
	}
	// Leader work gets the deadline, not the grace period: that is kept for
	// the release.
	if !waitFor(b.soft, e.work.wait(), nil) {
		e.log.Warn("leader work did not return before the stop deadline")
		errs = append(errs, fmt.Errorf("fxelection: stop: leader work (OnStartedLeading or RunIfLeader) still running: %w", b.soft.Err()))
	}

	for _, w := range policyDone {
		if lctx := b.ctx(); !waitFor(lctx, w.done, nil) {
			e.log.Warn(w.what + " did not return before the stop deadline")
			errs = append(errs, fmt.Errorf("fxelection: stop: %s still running: %w", w.what, lctx.Err()))
		}
	}

	e.mu.Lock()
	final := e.finalLease
	e.mu.Unlock()
	if final != nil && !final.IsZero() && !e.cfg.KeepLeaseOnStop {
		if err := e.stopRelease(b.ctx(), *final); err != nil {
			errs = append(errs, err)
		}
	}
	if lctx := b.ctx(); listenDone != nil && e.subscribed.Load() && !waitFor(lctx, listenDone, nil) {
		e.log.Warn("push listener cancel did not return before the stop deadline")
		errs = append(errs, fmt.Errorf("fxelection: stop: push listener cancel still running: %w", lctx.Err()))
	}
	e.detached.Store(true)
	e.broadcast(Event{Kind: EventDetached})
	if dctx := b.ctx(); !waitFor(dctx, e.callbacks().closed(), nil) {
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
// closed; it prefers ch when both are ready, and once ctx is done it calls
// atBound (unless nil) and still gives ch stopGrace to close (a goroutine
// that was about to finish, or a backend call noticing its context).
func waitFor(ctx context.Context, ch <-chan struct{}, atBound func()) bool {
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
	if atBound != nil {
		atBound()
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
		t.stepDown(ReasonStopped, false)
	}
	return fmt.Errorf("fxelection: stop: %s: %w", what, cause)
}

// stopRelease releases final for Stop within ctx (Stop's bound). The call
// runs on its own goroutine so that a backend ignoring its context cannot
// hold Stop past that bound.
func (e *Elector) stopRelease(ctx context.Context, final Lease) error {
	var err error
	done := make(chan struct{})
	go func() {
		err = e.release(ctx, final)
		close(done)
	}()
	if waitFor(ctx, done, nil) {
		return err
	}
	e.log.Warn("release did not return before the stop deadline; leaving it to finish on its own")
	return fmt.Errorf("fxelection: stop: backend release call still running: %w", ctx.Err())
}

// stopGrace is how long Stop waits, once a step's bound has passed, for
// what it waited on to finish anyway (a backend call that honours its
// context returns at once then).
const stopGrace = 10 * time.Millisecond
