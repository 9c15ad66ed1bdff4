package fxelection

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/keeper"
)

// A leadership: its record (leaderTerm), how it begins (becomeLeader), is
// renewed (renewOnce, extend, nextRenewal) and ends (stepDown), and the
// leader context it is. Its timer, renew deadline, context core and the
// cut of a renewal in flight are the one lease-holding core every holder
// shares (keeper.Term); this file supplies the Elector's Holder (termHolder).

// leaderTerm is one period of leadership. It is also the leader context
// (keeper.Term's context methods and its Value), and the one timer of its
// keeper.Term drives both the renewals and the renew deadline (its
// keeper.Holder is termHolder). The Term is guarded by Elector.mu.
type leaderTerm struct {
	keeper.Term
	e     *Elector
	lease Lease // the lease as last renewed
	// acquired is the lease as acquired: the leader context's value.
	acquired Lease
	since    time.Time // start of the attempt that acquired it
	// stepMu is held by stepDown while it ends and announces the
	// leadership, so that a concurrent stepDown (the loop's and the
	// timer's) returns only once the announcement is made.
	stepMu sync.Mutex
	// startedDone is closed when OnStartedLeading has returned (nil when
	// there is none): OnStoppedLeading waits for it.
	startedDone chan struct{}
}

// believed returns the current leadership if this candidate still believes
// in it: held, not ended, and its renew deadline not yet passed (even if the
// deadline timer has not fired yet). Called with e.mu held.
func (e *Elector) believed() *leaderTerm {
	t := e.term
	if t == nil || t.Ended() || t.Cancelled() || !time.Now().Before(t.Expiry()) {
		return nil
	}
	return t
}

// renewOnce makes one renewal of t, storing the renewed lease in *out;
// timedOut reports that the renew deadline ended the call. In a Group on
// a backend that renews in batches it goes in the next batch, waiting
// under t.Renewal, which is cut at the renew deadline (by the timer) and
// by Stop's bound, but not when Stop begins (see keeper.Cut): no context
// of its own is needed per renewal.
func (t *leaderTerm) renewOnce(out *Lease) (timedOut bool, err error) {
	if bt := t.e.batch; bt != nil {
		err = bt.renew(&t.Renewal, t.Expiry(), &t.lease, out)
		return errors.Is(err, context.DeadlineExceeded), err
	}
	return t.renewDirect(out)
}

// renewDirect renews t with Backend.Renew, bounded by its renew deadline.
//
// Not an opContext, which Stop cancels when it begins: Stop lets a renewal
// in flight finish, so that it releases the lease as the store last wrote
// it, and cuts it only when its bound for the campaign loop ends (see
// keeper.Cut). The leadership's end cuts it too.
func (t *leaderTerm) renewDirect(out *Lease) (timedOut bool, err error) {
	e := t.e
	rctx, cancel := context.WithDeadline(e.base, t.Expiry())
	defer cancel()
	stop := t.Renewal.AfterFunc(cancel)
	defer stop()
	*out, err = e.backend.Renew(rctx, t.lease)
	return rctx.Err() != nil && errors.Is(err, context.DeadlineExceeded), err
}

// nextRenewal is when the renewal after a successful one that started at
// start is due: RetryPeriod later, rounded down to the batch grid when
// the backend batches (up to RetryPeriod/64 early, so that it shares a
// round trip, never later).
func (t *leaderTerm) nextRenewal(start time.Time) time.Time {
	due := start.Add(t.e.cfg.RetryPeriod)
	if t.e.batch != nil {
		due = renewSlot(due, t.e.cfg.RetryPeriod)
	}
	return due
}

// termHolder is a leaderTerm as its keeper.Term's Holder: the Elector's
// lock guards it.
type termHolder leaderTerm

// Lock locks the Elector.
func (h *termHolder) Lock() { h.e.mu.Lock() }

// Unlock unlocks the Elector.
func (h *termHolder) Unlock() { h.e.mu.Unlock() }

// OnDeadline: the renew deadline passed. It ends the leadership itself
// (end) and wakes the loop to go on from there.
func (h *termHolder) OnDeadline() {
	t, e := (*leaderTerm)(h), h.e
	// Not left to the loop: it may be stuck in a backend call that
	// ignores its context, and the leader context, OnStoppedLeading and
	// the log line must all come by the deadline. After Stop began it is
	// Stop's step-down, which keeps the lease for release.
	if e.halted.Load() {
		t.end(ReasonStopped, true, false)
	} else {
		t.end(ReasonDeadline, false, false)
	}
	if e.signal(evDeadline) {
		e.leadStep() // the timer's goroutine resumes the parked loop
	}
}

// OnDue: a renewal is due. It wakes the loop to renew, on the timer's
// goroutine if the loop is parked.
func (h *termHolder) OnDue() {
	if e := h.e; e.signal(evRenew) {
		e.leadStep()
	}
}

// becomeLeader records a new leadership and announces it.
func (e *Elector) becomeLeader(lease Lease, start time.Time) *leaderTerm {
	t := &leaderTerm{e: e, lease: lease, acquired: lease.Clone(), since: start}
	// Until the leadership is announced, a step-down by the timer (whose
	// deadline may have passed already, after an Acquire that ignored its
	// context) waits: "stopped" never comes before "started".
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	// The timer, not the loop, ends belief at the deadline: a backend call
	// that ignores its context cannot stretch leadership. It also wakes a
	// parked loop to step down (and to renew, once armRenewal set a time).
	e.mu.Lock() // the timer takes it: it is set before it runs
	t.BeginLocked((*termHolder)(t), e.cfg.RenewDeadline, start)
	e.term = t
	e.finalLease = nil
	halted := e.halted.Load() // Stop cancels e.term: this one too
	e.mu.Unlock()
	if halted {
		t.Cancel()
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
func (t *leaderTerm) extend(l Lease, start time.Time) bool {
	e := t.e
	e.mu.Lock()
	margin := e.cfg.LeaseDuration - time.Since(t.LastRenew())
	if !t.ExtendLocked(start) { // the deadline passed, or Stop ended it, while the renewal ran
		e.mu.Unlock()
		return false
	}
	t.lease = l
	if e.leaderKnown && e.leader.Holder == l.Holder && e.leader.Term == l.Term {
		e.leader = l // Leader() on the leader shows the lease as last renewed
	}
	e.mu.Unlock()
	e.observe(Event{Kind: EventRenewed, Lease: l.Clone(), Margin: margin})
	return true
}

// stepDown ends leadership t and announces it, once: later calls for the
// same t do nothing. keep marks the lease for release by Stop.
//
// The loop calls it; so does t's timer (through end) at the renew
// deadline, perhaps at the same time: the first announces, and t.stepMu
// makes the other wait until that announcement is made, so that the loop
// goes on (to campaign, and perhaps announce a new leadership) only after
// it.
func (t *leaderTerm) stepDown(reason StopReason, keep bool) StopReason {
	return t.end(reason, keep, true)
}

// end is stepDown; byLoop says the campaign loop calls it, which ends
// Holding (Status) too: a step-down by the timer leaves Holding true until
// the loop, perhaps stuck in a backend call, gets there. keep marks the
// lease for release by Stop also when the timer has announced the end
// already (Stop began while the loop was stuck).
func (t *leaderTerm) end(reason StopReason, keep, byLoop bool) StopReason {
	e := t.e
	t.Halt() // a renewal in flight is given up: the leadership is over
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
	if !t.EndLocked() {
		e.mu.Unlock()
		return reason
	}
	// The next leadership, even of a record still in the store, gets a
	// term of its own: a write of this one still in flight is fenced off.
	e.incarnation = backendkit.NewIncarnation()
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

// The leader context (given to OnStartedLeading and, derived, to
// RunIfLeader functions) is the leaderTerm itself: it carries the lease as
// acquired and the values of Start's context, has no deadline, and is
// cancelled when the leadership ends (stepDown), at the renew deadline (the
// term's timer), and when Stop begins. Its Done, Err and AfterFunc are
// keeper.Term's: a leadership nobody watches costs no channel, and
// contexts derived from it need no goroutine.

// Value implements context.Context: the lease as acquired for
// LeaseFromContext and as the fencing token (backendkit.TokenKey, which
// hides any token Start's context carried), otherwise Start's context's
// values.
func (t *leaderTerm) Value(key any) any {
	switch key.(type) {
	case backendkit.LeaseKey, backendkit.TokenKey:
		return t.acquired
	}
	return t.e.base.Value(key)
}

// String names the context, as the context package's own types do.
func (t *leaderTerm) String() string { return "fxelection.leaderContext" }
