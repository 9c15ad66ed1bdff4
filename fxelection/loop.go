package fxelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/keeper"
)

// The campaign loop: campaign, lead, repeat. One goroutine at a time runs
// it and owns all timing, but no goroutine waits while it leads: its first
// step (begin) runs on a worker shared per backend (startCampaign), a
// campaign blocks on a goroutine as before, while a leadership parks (see
// leadStep) and is resumed, on a goroutine of its own, by its timer
// (renewal or renew deadline), Stop, or a request (TryAcquire, Resign).

// begin is the campaign's first step, on a starter worker: the first
// attempt, then leading (parked) or, for a follower, the rest of the
// campaign on a goroutine of its own. It never waits between attempts, so
// that the worker goes on with the next elector; when the attempt goes in
// a batch (backendkit.BatchAcquirer) it does not wait for it either: the
// batch's outcome goes on from there (begun).
func (e *Elector) begin() {
	if e.halted.Load() {
		e.endLoop()
		return
	}
	if e.batchesAcquire() && e.healthy.Load() && !e.deferring() && !e.inGrace() {
		e.attemptBatched(e.begun)
		return
	}
	var lease Lease
	s, err := e.attempt(&lease)
	e.begun(lease, s, err)
}

// begun goes on from the campaign's first attempt, which started at s
// and won lease unless err.
func (e *Elector) begun(lease Lease, s time.Time, err error) {
	switch {
	case err == nil:
		e.startLead(lease, s, nil)
		// Events that came meanwhile (Stop, requests) are handled on a
		// goroutine of their own: the worker must not wait in them.
		e.evMu.Lock()
		pending := e.events != 0 || len(e.mailbox) > 0
		e.parked = !pending
		e.evMu.Unlock()
		if pending {
			go e.leadStep()
		}
	case e.halted.Load():
		e.endLoop()
	default:
		delay, failures := e.retryDelay(err, 0)
		go e.loop(delay, failures, time.Now())
	}
}

// loop campaigns (first waiting delay, after failures consecutive store
// failures, ignoring wake-ups until ignoreWakeUntil), then starts leading
// and parks.
func (e *Elector) loop(delay time.Duration, failures int, ignoreWakeUntil time.Time) {
	lease, start, pending, ok := e.campaign(delay, failures, ignoreWakeUntil)
	if !ok {
		e.endLoop()
		return
	}
	e.startLead(lease, start, pending)
	e.leadStep()
}

// afterLead goes on from a leadership that ended for reason: campaign
// again, or end the loop.
func (e *Elector) afterLead(reason StopReason) {
	e.ls = leadState{}
	if reason == ReasonStopped || e.halted.Load() || e.cfg.NoRecampaign {
		e.endLoop()
		return
	}
	var delay, ignoreWake time.Duration
	switch reason {
	case ReasonResigned, ReasonPreempted:
		delay, ignoreWake = 2*e.cfg.RetryPeriod, 2*e.cfg.RetryPeriod
	case ReasonDeadline:
		// Not at once: a leadership that ended by the renew deadline most
		// often ended because the store or this process was overloaded
		// (renewals that did not finish in time), and a re-campaign at once
		// from every election that lost would add to that load while its
		// own record, still in the store, keeps others out anyway. The
		// wait doubles with each such loss in a row from RetryPeriod up to
		// LeaseDuration−RenewDeadline (by then the old record has expired
		// and others may take it, so waiting longer gains nothing), drawn
		// evenly from its upper half; a push wake-up still cuts it short.
		// A lease lost to another holder (ReasonLost) is asked for again at
		// once: the answer names the new leader.
		e.losses = min(e.losses+1, maxLosses)
		delay = spread(recampaignWait(int(e.losses), e.cfg.RetryPeriod, e.cfg.LeaseDuration-e.cfg.RenewDeadline))
	}
	e.loop(delay, 0, time.Now().Add(ignoreWake))
}

// retryDelay returns the wait before the next attempt after one that
// failed with err, and the count of consecutive store failures. After n
// store failures it is RetryPeriod doubling per failure, capped at
// MaxBackoff, jittered (never beyond MaxBackoff).
func (e *Elector) retryDelay(err error, failures int) (time.Duration, int) {
	if backendkit.IsStoreFailure(err) && !errors.Is(err, errUnhealthy) {
		failures++
		return keeper.AttemptRetry(e.cfg.RetryPeriod, e.cfg.MaxBackoff, failures), failures
	}
	return keeper.AttemptRetry(e.cfg.RetryPeriod, e.cfg.MaxBackoff, 0), 0
}

// campaign tries to acquire until it succeeds (ok) or Stop begins. It
// waits delay before the first attempt and ignores wake-ups until
// ignoreWakeUntil.
//
// The waiting between attempts is in pause, and attempt keeps the backend
// call apart from what follows it, so that a campaign goroutine waiting in
// the backend has a small stack.
func (e *Elector) campaign(delay time.Duration, failures int, ignoreWakeUntil time.Time) (lease Lease, start time.Time, pending *request, ok bool) {
	for {
		var req *request // a TryAcquire that cut the wait short
		if delay > 0 {
			var stopped bool
			if req, stopped = e.pause(delay, ignoreWakeUntil); stopped {
				return Lease{}, time.Time{}, nil, false
			}
		}
		s, err := e.attempt(&lease)
		if e.cfg.Candidacy.Preempt {
			var held *backendkit.HeldError
			if errors.As(err, &held) {
				e.requestPreemption(held.Holder)
			}
		}
		switch {
		case err == nil:
			return lease, s, req, true
		case req != nil:
			// Answered, and the current delay schedule kept (pause sees
			// a Stop).
			if !backendkit.IsStoreFailure(err) || errors.Is(err, errUnhealthy) {
				err = nil
			}
			req.reply <- result{err: err}
			continue
		case e.halted.Load():
			return Lease{}, time.Time{}, nil, false
		}
		delay, failures = e.retryDelay(err, failures)
	}
}

// pause waits delay before the campaign's next attempt. It ends early on a
// wake-up (once ignoreWakeUntil has passed) or a TryAcquire, which it
// returns for an attempt now; a Resign is answered at once (a follower has
// nothing to resign). stopped reports that Stop began.
func (e *Elector) pause(delay time.Duration, ignoreWakeUntil time.Time) (req *request, stopped bool) {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		if e.halted.Load() {
			return nil, true
		}
		if e.takeWoken() && !time.Now().Before(ignoreWakeUntil) {
			return nil, false
		}
		if r, ok := e.nextRequest(); ok {
			if r.kind != reqTryAcquire { // a follower has nothing to resign
				r.reply <- result{}
				continue
			}
			return &r, false
		}
		select {
		case <-timer.C:
			return nil, false
		case <-e.mail:
		}
	}
}

// attempt makes one Acquire call, stores the lease won in *won (the zero
// Lease otherwise) and records what it learned. The call is bounded by
// RenewDeadline: a lease won after that long would have to be given up at
// once (belief is measured from the attempt's start), and a hung store
// must not keep the loop from TryAcquire, Resign or Stop. In a Group on a
// backend that acquires in batches it goes in the next batch, and attempt
// waits for its outcome.
func (e *Elector) attempt(won *Lease) (time.Time, error) {
	start := time.Now()
	if !e.healthy.Load() { // Config.HealthCheck; the checker pokes the loop once healthy
		*won = Lease{}
		return start, errUnhealthy
	}
	if d, grace := e.deferring(), e.inGrace(); d || grace {
		err := e.look(start)
		switch {
		case err == nil:
			// Handed to this candidate (or its own record): take it.
		case grace && !d && errors.Is(err, backendkit.ErrNoLease) && e.graceOver(true):
			// Free for PriorityGrace: the higher one did not come.
		default:
			if grace {
				e.graceOver(errors.Is(err, backendkit.ErrNoLease))
			}
			*won = Lease{}
			return start, err
		}
	} else if e.batchesAcquire() {
		done := make(chan struct{})
		var err error
		e.attemptBatched(func(l Lease, _ time.Time, aerr error) {
			*won, err = l, aerr
			close(done)
		})
		<-done
		return start, err
	}
	actx, cancel := e.opContext(e.base, start.Add(e.cfg.RenewDeadline))
	end := e.during(OpAcquire)
	l, err := e.backend.Acquire(actx, e.acquireRequest())
	end()
	cancel()
	*won = l
	return start, e.attempted(start, won, err)
}

// batchesAcquire reports whether the elector's attempts go in batches.
func (e *Elector) batchesAcquire() bool { return e.batch != nil && e.batch.a != nil }

// attemptBatched queues one attempt in the group's batcher, bounded as
// attempt's, and calls then with its outcome as attempt returns it (the
// lease won, the attempt's start, attempted's error), from the batcher.
func (e *Elector) attemptBatched(then func(won Lease, start time.Time, err error)) {
	start := time.Now()
	deadline := start.Add(e.cfg.RenewDeadline)
	actx, cancel := e.opContext(e.base, deadline)
	end := e.during(OpAcquire)
	e.batch.acquire(actx, deadline, e.acquireRequest(), func(l Lease, err error) {
		end()
		cancel()
		err = e.attempted(start, &l, err)
		then(l, start, err)
	}, e.wonLate)
}

// wonLate handles a lease that an attempt given up in its batch won all
// the same: a stopping elector gives it back (dropLate); otherwise it is
// the elector's own under its current incarnation, and its next attempt
// continues it.
func (e *Elector) wonLate(l Lease) {
	if e.halted.Load() {
		go e.dropLate(l) // bounded by RetryPeriod; the batch's other outcomes must not wait
	}
}

// attempted records the outcome of the attempt that started at start:
// err from Acquire (nil when *won is the lease won). It returns the error
// for the campaign (context.Canceled once Stop began; a lease won then is
// given back, see dropLate) and clears *won on an error.
func (e *Elector) attempted(start time.Time, won *Lease, err error) error {
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: OpAcquire, Duration: time.Since(start), Err: err})
	if err != nil {
		*won = Lease{}
	}
	var held *backendkit.HeldError
	switch {
	case err == nil && e.halted.Load():
		e.contact()
		e.dropLate(*won)
		*won = Lease{}
		return context.Canceled
	case err == nil:
		e.contact()
		return nil
	case errors.As(err, &held):
		e.contact()
		e.observeLeader(held.Holder)
		return err
	case e.halted.Load():
		return context.Canceled
	default:
		e.fail(OpAcquire, err)
		return err
	}
}

// dropLate gives back a lease acquired just as the elector was stopped,
// without announcing it: nobody was told it led, so nobody must be told it
// stopped. KeepLeaseOnStop leaves it to expire.
func (e *Elector) dropLate(l Lease) {
	if e.cfg.KeepLeaseOnStop {
		return
	}
	rctx, cancel := context.WithTimeout(e.base, e.cfg.RetryPeriod)
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
func (e *Elector) startLead(lease Lease, start time.Time, pending *request) {
	t := e.becomeLeader(lease, start)
	if pending != nil {
		pending.reply <- result{leading: true}
	}
	// The first renewal comes at a random point of the first retry period,
	// so that elections acquired together spread out; later ones follow the
	// last success by RetryPeriod (rounded down to the batch grid when the
	// backend batches), keeping that phase.
	e.ls = leadState{t: t}
	e.armRenewal(start.Add(firstRenewal(e.cfg.RetryPeriod)))
}

// armRenewal sets the next renewal for due.
func (e *Elector) armRenewal(due time.Time) {
	e.ls.due = due
	t := e.ls.t
	e.mu.Lock()
	t.due = due
	t.rearm(time.Now())
	e.mu.Unlock()
}

// rearm sets t's timer for the earlier of its next renewal and its renew
// deadline, unless the leadership is over; the caller holds e.mu.
func (t *leaderTerm) rearm(now time.Time) {
	if t.ended || t.expired {
		return
	}
	next := t.deadline()
	if !t.due.IsZero() && t.due.Before(next) {
		next = t.due
	}
	if next.Before(t.armed) {
		// Earlier than it is set for: a new timer instead of Reset. The
		// runtime keeps a timer moved earlier in place and, once it is
		// due, scans every timer of its P to fix the heap (timers.adjust);
		// with many elections that scan, at every such timer, ate the
		// CPU after an overload. A stopped timer is dropped cheaply.
		t.timer.Stop()
		t.timer = time.AfterFunc(next.Sub(now), t.fire)
	} else {
		t.timer.Reset(next.Sub(now))
	}
	t.armed = next
}

// fire is t's timer. At a renewal's time it wakes the loop to renew and
// re-arms itself for the renew deadline, which keeps running while the
// renewal is in flight. At the deadline it ends the leadership itself
// (endTerm) and wakes the loop to go on from there.
func (t *leaderTerm) fire() {
	e := t.e
	e.mu.Lock()
	if t.ended || t.expired {
		e.mu.Unlock()
		return
	}
	now := time.Now()
	if !now.Before(t.deadline()) {
		t.expired = true
		e.mu.Unlock()
		// Not left to the loop: it may be stuck in a backend call that
		// ignores its context, and the leader context, OnStoppedLeading
		// and the log line must all come by the deadline. After Stop
		// began it is Stop's step-down, which keeps the lease for release.
		if e.halted.Load() {
			e.endTerm(t, ReasonStopped, true, false)
		} else {
			e.endTerm(t, ReasonDeadline, false, false)
		}
		if e.signal(evDeadline) {
			e.leadStep() // the timer's goroutine resumes the parked loop
		}
		return
	}
	renew := !t.due.IsZero() && !now.Before(t.due)
	if renew {
		t.due = time.Time{}
	}
	t.rearm(now)
	e.mu.Unlock()
	if renew {
		if e.signal(evRenew) {
			e.leadStep()
		}
	}
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
		reason, ended, rest := e.leadEvents(ev, reqs)
		if ended {
			if len(rest) > 0 {
				e.requeue(rest)
			}
			e.afterLead(reason)
			return
		}
	}
}

// ask posts a request of kind to the loop, resuming it if parked, and
// waits for the answer, for ctx, or for the loop to end (ErrNotRunning).
func (e *Elector) ask(ctx context.Context, kind requestKind) (result, error) {
	return e.askRequest(ctx, request{kind: kind, ctx: ctx, reply: make(chan result, 1)})
}

// askRequest is ask for a request made by the caller (req.reply buffered).
func (e *Elector) askRequest(ctx context.Context, req request) (result, error) {
	posted, resume := e.post(req)
	if !posted {
		return result{}, ErrNotRunning
	}
	if resume {
		go e.leadStep()
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

// leadEvents handles one set of events for the leadership: Stop, the
// renew deadline, requests in order, the renewal timer. ended reports that
// the leadership ended and why; rest are the requests it left for the
// campaign.
func (e *Elector) leadEvents(ev loopEvent, reqs []request) (reason StopReason, ended bool, rest []request) {
	t := e.ls.t
	if e.halted.Load() {
		return e.stepDown(t, ReasonStopped, true), true, reqs
	}
	if t.cancelled.Load() {
		return e.stepDown(t, ReasonDeadline, false), true, reqs
	}
	for i, r := range reqs {
		if r.kind == reqTryAcquire {
			r.reply <- result{leading: true}
			continue
		}
		return e.resign(t, r), true, reqs[i+1:]
	}
	if ev&evRenew != 0 && !time.Now().Before(e.ls.due) {
		if reason, ended := e.renew(t); ended {
			return reason, true, nil
		}
	}
	return "", false, nil
}

// resign is the leadership's answer to Resign, or to the health checker
// (request r): end the leadership, wait for leader work, release the lease.
func (e *Elector) resign(t *leaderTerm, r request) StopReason {
	reason := ReasonResigned
	switch r.kind {
	case reqUnhealthy:
		reason = ReasonUnhealthy
	case reqPreempt:
		reason = ReasonPreempted
	}
	e.stepDown(t, reason, false)
	wctx, endWait := e.opContext(r.ctx, time.Time{})
	select {
	case <-e.work.wait():
	case <-wctx.Done():
	}
	endWait()
	// Bounded, and cut short by Stop: a hung store must not keep
	// the loop (and so Stop) waiting on the caller's context.
	rctx, end := e.opContext(r.ctx, time.Now().Add(e.cfg.RenewDeadline))
	var err error
	if r.kind == reqResignTo || r.kind == reqPreempt {
		err = e.handOver(rctx, t.lease, r.to)
	} else {
		endOp := e.during(OpRelease)
		err = e.release(rctx, t.lease)
		endOp()
	}
	end()
	r.reply <- result{err: err}
	return reason
}

// renew makes one renewal of t (through the batcher when the backend
// batches) and arms the next; ended reports that the leadership ended, and
// why.
//
// The call and what follows it are in functions of their own (renewDirect,
// renewed), so that a renewal waiting for its batch keeps a small stack:
// many wait at once in a process with many elections.
func (e *Elector) renew(t *leaderTerm) (reason StopReason, ended bool) {
	renewStart := time.Now()
	end := e.during(OpRenew)
	var (
		l        Lease
		err      error
		timedOut bool // the renew deadline ended the call
	)
	if e.batch != nil {
		// It waits under t.renewal, which is cut at the renew deadline
		// (by the timer) and by Stop's bound, but not when Stop begins
		// (see renewalCut): no context of its own is needed per renewal.
		err = e.batch.renew(&t.renewal, t.deadline(), &t.lease, &l)
		timedOut = errors.Is(err, context.DeadlineExceeded)
	} else {
		timedOut, err = e.renewDirect(t, &l)
	}
	end()
	return e.renewed(t, renewStart, &l, err, timedOut)
}

// renewDirect renews t with Backend.Renew, bounded by its renew deadline,
// storing the renewed lease in *out; timedOut reports that the deadline
// ended the call.
//
// Not an opContext, which Stop cancels when it begins: Stop lets a renewal
// in flight finish, so that it releases the lease as the store last wrote
// it, and cuts it only when its bound for the campaign loop ends (see
// renewalCut). The leadership's end cuts it too.
func (e *Elector) renewDirect(t *leaderTerm, out *Lease) (timedOut bool, err error) {
	rctx, cancel := context.WithDeadline(e.base, t.deadline())
	defer cancel()
	stop := t.renewal.AfterFunc(cancel)
	defer stop()
	*out, err = e.backend.Renew(rctx, t.lease)
	return rctx.Err() != nil && errors.Is(err, context.DeadlineExceeded), err
}

// renewed handles the outcome of t's renewal that started at renewStart:
// the renewed lease *l when err is nil.
func (e *Elector) renewed(t *leaderTerm, renewStart time.Time, l *Lease, err error, timedOut bool) (reason StopReason, ended bool) {
	err = redactErr(err)
	took := time.Since(renewStart)
	e.observe(Event{Kind: EventOperation, Op: OpRenew, Duration: took, Err: err})
	switch {
	case err == nil && e.halted.Load():
		// Stop began while the renewal ran and let it finish: Stop
		// releases the lease as the store wrote it (a store that matches
		// the last write on release would free nothing given the lease as
		// it was before), even if the timer ended the leadership meanwhile
		// (the renewal outlasted its renew deadline) and announced its end
		// with the lease as it was. The leadership ended for its users
		// when Stop began: no EventRenewed, only its end.
		e.contact()
		e.mu.Lock()
		if !t.expired && !t.ended {
			t.lease = *l
		}
		e.mu.Unlock()
		reason := e.stepDown(t, ReasonStopped, true)
		renewedLease := *l
		e.mu.Lock()
		e.finalLease = &renewedLease
		e.mu.Unlock()
		return reason, true
	case err == nil:
		e.contact()
		if !e.extend(t, *l, renewStart) {
			return e.stepDown(t, ReasonDeadline, false), true
		}
		e.ls.failures = 0
		e.losses = 0
		if to, ok := e.preemptor(t); ok {
			e.log.Info("preempted: handing over to a candidate of higher priority", "successor", to)
			return e.resign(t, request{kind: reqPreempt, ctx: context.WithoutCancel(e.base), reply: make(chan result, 1), to: to}), true
		}
		due := renewStart.Add(e.cfg.RetryPeriod)
		if e.batch != nil {
			// Rounded down to the batch grid: up to RetryPeriod/64 early,
			// so that it shares a round trip, never later.
			due = renewSlot(due, e.cfg.RetryPeriod)
		}
		e.armRenewal(due)
	case errors.Is(err, backendkit.ErrLeaseLost):
		e.contact()
		return e.stepDown(t, ReasonLost, false), true
	case e.halted.Load():
		return e.stepDown(t, ReasonStopped, true), true
	default:
		if timedOut {
			e.fail(OpRenew, fmt.Errorf("renew did not finish before the renew deadline: %w", err))
		} else {
			e.fail(OpRenew, err)
		}
		e.ls.failures++
		// Retry sooner than RetryPeriod: the deadline is running out.
		e.armRenewal(time.Now().Add(keeper.RenewRetry(e.cfg.RetryPeriod, e.ls.failures)))
	}
	return "", false
}

// becomeLeader records a new leadership and announces it.
func (e *Elector) becomeLeader(lease Lease, start time.Time) *leaderTerm {
	t := &leaderTerm{e: e, lease: lease, acquired: lease.Clone(), lastRenew: start, since: start}
	// Until the leadership is announced, a step-down by the timer (whose
	// deadline may have passed already, after an Acquire that ignored its
	// context) waits: "stopped" never comes before "started".
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	// The timer, not the loop, ends belief at the deadline: a backend call
	// that ignores its context cannot stretch leadership. It also wakes a
	// parked loop to step down (and to renew, once armRenewal set a time).
	e.mu.Lock() // fire takes it: t.timer is set before it runs
	t.armed = t.deadline()
	t.timer = time.AfterFunc(time.Until(t.armed), t.fire)
	e.term = t
	e.finalLease = nil
	halted := e.halted.Load() // Stop cancels e.term: this one too
	e.mu.Unlock()
	if halted {
		t.cancel()
	}
	e.observeLeader(lease)
	e.log.Info("leadership acquired", "term", lease.Term)
	e.observe(Event{Kind: EventStartedLeading, Lease: lease.Clone()})

	e.startedLeading(t)
	return t
}

// extend records a successful renewal started at start; false if the
// timer already found the renew deadline passed (belief has ended, so
// leadership must too).
func (e *Elector) extend(t *leaderTerm, l Lease, start time.Time) bool {
	margin := e.cfg.LeaseDuration - time.Since(t.lastRenew)
	e.mu.Lock()
	if t.expired || t.ended { // the deadline passed, or Stop ended it, while the renewal ran
		e.mu.Unlock()
		return false
	}
	t.lease, t.lastRenew = l, start
	if e.leaderKnown && e.leader.Holder == l.Holder && e.leader.Term == l.Term {
		e.leader = l // Leader() on the leader shows the lease as last renewed
	}
	t.rearm(time.Now()) // for the new deadline; armRenewal sets the next renewal
	e.mu.Unlock()
	e.observe(Event{Kind: EventRenewed, Lease: l.Clone(), Margin: margin})
	return true
}

// stepDown ends leadership t and announces it, once: later calls for the
// same t do nothing. keep marks the lease for release by Stop.
//
// The loop calls it; so does t's timer (through endTerm) at the renew
// deadline, perhaps at the same time: the first announces, and t.stepMu
// makes the other wait until that announcement is made, so that the loop
// goes on (to campaign, and perhaps announce a new leadership) only after
// it.
func (e *Elector) stepDown(t *leaderTerm, reason StopReason, keep bool) StopReason {
	return e.endTerm(t, reason, keep, true)
}

// endTerm is stepDown; byLoop says the campaign loop calls it, which ends
// Holding (Status) too: a step-down by the timer leaves Holding true until
// the loop, perhaps stuck in a backend call, gets there. keep marks the
// lease for release by Stop also when the timer has announced the end
// already (Stop began while the loop was stuck).
func (e *Elector) endTerm(t *leaderTerm, reason StopReason, keep, byLoop bool) StopReason {
	e.mu.Lock() // rearm replaces t.timer under it
	t.timer.Stop()
	e.mu.Unlock()
	t.cancel()
	t.renewal.fire() // a renewal in flight is given up: the leadership is over
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	e.mu.Lock()
	if byLoop && e.term == t {
		e.term = nil
	}
	if keep {
		final := t.lease
		e.finalLease = &final
	}
	if t.ended {
		e.mu.Unlock()
		return reason
	}
	t.ended = true
	// The next leadership, even of a record still in the store, gets a
	// term of its own: a write of this one still in flight is fenced off.
	e.incarnation = backendkit.NewIncarnation()
	t.timer.Stop() // fire may have re-armed it before ended was set
	e.leader, e.leaderKnown = Lease{}, false
	e.mu.Unlock()
	level := slog.LevelWarn
	if reason == ReasonStopped || reason == ReasonResigned {
		level = slog.LevelInfo
	}
	e.log.Log(context.Background(), level, "leadership lost", "term", t.lease.Term, "reason", string(reason))
	e.observe(Event{Kind: EventStoppedLeading, Lease: t.lease.Clone(), Reason: reason})
	e.stoppedLeading(t, reason)
	return reason
}
