package fxelection

import (
	"errors"
	"fmt"
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
//
// Why a candidate should or should not campaign is not the loop's
// business: it asks the policies (policy.go) at fixed points: the gates
// before each attempt (acquire, only look, or skip), the refusal rules
// when an attempt finds the lease held, the renewal rules after each
// successful renewal (resign, and how the lease is given back).

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
	mode, looked := e.pol.gateMode(e)
	if mode == modeAcquire && e.batchesAcquire() {
		e.attemptBatched(e.begun)
		return
	}
	var lease Lease
	s, err := e.attemptAs(mode, looked, &lease)
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
		pending := e.events != 0 || len(e.reqs) > 0
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
	sitOut := e.ls.sitOut
	e.ls = leadState{}
	if reason == ReasonStopped || e.halted.Load() || e.cfg.NoRecampaign {
		e.endLoop()
		return
	}
	var delay, ignoreWake time.Duration
	switch {
	case sitOut: // a resign (Resign, ResignTo, a policy's) leaves the lease to others for a while
		delay, ignoreWake = 2*e.cfg.RetryPeriod, 2*e.cfg.RetryPeriod
	case reason == ReasonDeadline:
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
	if backendkit.IsStoreFailure(err) && err != errSkipped {
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
		if rs := e.pol.refusals; len(rs) > 0 {
			var held *backendkit.HeldError
			if errors.As(err, &held) {
				for _, r := range rs {
					r.refused(e, held.Holder)
				}
			}
		}
		switch {
		case err == nil:
			return lease, s, req, true
		case req != nil:
			// Answered, and the current delay schedule kept (pause sees
			// a Stop).
			if !backendkit.IsStoreFailure(err) || err == errSkipped {
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

// attempt makes one attempt as the policies ask (see attemptAs).
func (e *Elector) attempt(won *Lease) (time.Time, error) {
	mode, looked := e.pol.gateMode(e)
	return e.attemptAs(mode, looked, won)
}

// attemptAs makes one attempt in mode, stores the lease won in *won (the
// zero Lease otherwise) and records what it learned. modeSkip makes none
// (errSkipped); modeLook reads the record first and acquires only when it
// is this candidate's own (a hand-over hint, a record of its from before)
// or every gate that asked for the look (looked) agrees. The Acquire call
// is bounded by RenewDeadline: a lease won after that long would have to
// be given up at once (belief is measured from the attempt's start), and
// a hung store must not keep the loop from TryAcquire, Resign or Stop. In
// a Group on a backend that acquires in batches it goes in the next
// batch, and attemptAs waits for its outcome.
func (e *Elector) attemptAs(mode attemptMode, looked uint64, won *Lease) (time.Time, error) {
	start := time.Now()
	*won = Lease{}
	switch {
	case mode == modeSkip: // a gate pokes the loop when it would let an attempt through
		return start, errSkipped
	case mode == modeLook:
		if err := e.look(start); err != nil && !e.pol.lookOver(e, looked, err) {
			return start, err
		}
	case e.batchesAcquire():
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
	end := e.during(backendkit.OpAcquire)
	l, err := e.backend.Acquire(actx, e.acquireRequest())
	end()
	cancel()
	*won = l
	return start, e.attempted(start, won, err)
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
	t.SetDueLocked(due)
	e.mu.Unlock()
}

// leadStep runs the leadership's events until none is left, then parks
// (returns, leaving no goroutine) until signal or post resumes it; when
// the leadership ends it goes on with afterLead on the same goroutine.
// Exactly one goroutine runs it at a time: the one that found the loop
// parked.
func (e *Elector) leadStep() {
	for {
		e.evMu.Lock()
		ev, reqs := e.events, e.reqs
		e.events, e.reqs = 0, nil
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

// leadEvents handles one set of events for the leadership: Stop, the
// renew deadline, requests in order, the renewal timer. ended reports that
// the leadership ended and why; rest are the requests it left for the
// campaign.
func (e *Elector) leadEvents(ev loopEvent, reqs []request) (reason StopReason, ended bool, rest []request) {
	t := e.ls.t
	if e.halted.Load() {
		return t.stepDown(ReasonStopped, true), true, reqs
	}
	if t.Cancelled() {
		return t.stepDown(ReasonDeadline, false), true, reqs
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

// resign is the leadership's answer to a resign request r (Resign,
// ResignTo, a policy's): end the leadership, wait for leader work, give
// the lease back (released, or r.giveBack).
func (e *Elector) resign(t *leaderTerm, r request) StopReason {
	reason := r.reason
	if reason == "" {
		reason = ReasonResigned
	}
	e.ls.sitOut = r.sitOut
	t.stepDown(reason, false)
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
	if r.giveBack != nil {
		err = r.giveBack(rctx, t.lease)
	} else {
		endOp := e.during(backendkit.OpRelease)
		err = e.release(rctx, t.lease)
		endOp()
	}
	end()
	r.reply <- result{err: err}
	return reason
}

// renew makes one renewal of t (leaderTerm.renewOnce) and arms the next;
// ended reports that the leadership ended, and why.
//
// The call and what follows it are in functions of their own (renewOnce,
// renewed), so that a renewal waiting for its batch keeps a small stack:
// many wait at once in a process with many elections.
func (e *Elector) renew(t *leaderTerm) (reason StopReason, ended bool) {
	renewStart := time.Now()
	end := e.during(backendkit.OpRenew)
	var l Lease
	timedOut, err := t.renewOnce(&l)
	end()
	return e.renewed(t, renewStart, &l, err, timedOut)
}

// renewed handles the outcome of t's renewal that started at renewStart:
// the renewed lease *l when err is nil.
func (e *Elector) renewed(t *leaderTerm, renewStart time.Time, l *Lease, err error, timedOut bool) (reason StopReason, ended bool) {
	err = redactErr(err)
	took := time.Since(renewStart)
	e.observe(Event{Kind: EventOperation, Op: backendkit.OpRenew, Duration: took, Err: err})
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
		if !t.Over() {
			t.lease = *l
		}
		e.mu.Unlock()
		reason := t.stepDown(ReasonStopped, true)
		renewedLease := *l
		e.mu.Lock()
		e.finalLease = &renewedLease
		e.mu.Unlock()
		return reason, true
	case err == nil:
		e.contact()
		if !t.extend(*l, renewStart) {
			return t.stepDown(ReasonDeadline, false), true
		}
		e.ls.failures = 0
		e.losses = 0
		for _, p := range e.pol.renewals {
			if r, ok := p.renewed(e, t); ok {
				return e.resign(t, r), true
			}
		}
		e.armRenewal(t.nextRenewal(renewStart))
	case errors.Is(err, backendkit.ErrLeaseLost):
		e.contact()
		return t.stepDown(ReasonLost, false), true
	case e.halted.Load():
		return t.stepDown(ReasonStopped, true), true
	default:
		if timedOut {
			e.fail(backendkit.OpRenew, fmt.Errorf("renew did not finish before the renew deadline: %w", err))
		} else {
			e.fail(backendkit.OpRenew, err)
		}
		e.ls.failures++
		// Retry sooner than RetryPeriod: the deadline is running out.
		e.armRenewal(time.Now().Add(keeper.RenewRetry(e.cfg.RetryPeriod, e.ls.failures)))
	}
	return "", false
}
