package fxelection

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// A leadership: its record (leaderTerm), its timer (rearm, fire), how it
// begins (becomeLeader), is renewed (renewOnce, extend, nextRenewal) and
// ends (stepDown), the leader context it is, and the cut of a renewal in
// flight (renewalCut).

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

// renewOnce makes one renewal of t, storing the renewed lease in *out;
// timedOut reports that the renew deadline ended the call. In a Group on
// a backend that renews in batches it goes in the next batch, waiting
// under t.renewal, which is cut at the renew deadline (by the timer) and
// by Stop's bound, but not when Stop begins (see renewalCut): no context
// of its own is needed per renewal.
func (t *leaderTerm) renewOnce(out *Lease) (timedOut bool, err error) {
	if bt := t.e.batch; bt != nil {
		err = bt.renew(&t.renewal, t.deadline(), &t.lease, out)
		return errors.Is(err, context.DeadlineExceeded), err
	}
	return t.renewDirect(out)
}

// renewDirect renews t with Backend.Renew, bounded by its renew deadline.
//
// Not an opContext, which Stop cancels when it begins: Stop lets a renewal
// in flight finish, so that it releases the lease as the store last wrote
// it, and cuts it only when its bound for the campaign loop ends (see
// renewalCut). The leadership's end cuts it too.
func (t *leaderTerm) renewDirect(out *Lease) (timedOut bool, err error) {
	e := t.e
	rctx, cancel := context.WithDeadline(e.base, t.deadline())
	defer cancel()
	stop := t.renewal.AfterFunc(cancel)
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

// fire is t's timer. At a renewal's time it wakes the loop to renew and
// re-arms itself for the renew deadline, which keeps running while the
// renewal is in flight. At the deadline it ends the leadership itself
// (end) and wakes the loop to go on from there.
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
			t.end(ReasonStopped, true, false)
		} else {
			t.end(ReasonDeadline, false, false)
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
func (t *leaderTerm) extend(l Lease, start time.Time) bool {
	e := t.e
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

// The leader context (given to OnStartedLeading and, derived, to
// RunIfLeader functions) is the leaderTerm itself: it carries the lease as
// acquired and the values of Start's context, has no deadline, and is
// cancelled when the leadership ends (stepDown), at the renew deadline (the
// term's timer), and when Stop begins. It makes its Done channel only when
// asked and implements AfterFunc, so that contexts derived from it need no
// goroutine: a leadership nobody watches costs no channel.

// Deadline implements context.Context: a leader context has none.
func (t *leaderTerm) Deadline() (deadline time.Time, ok bool) { return time.Time{}, false }

// Done implements context.Context.
func (t *leaderTerm) Done() <-chan struct{} {
	t.cmu.Lock()
	defer t.cmu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
		if t.cancelled.Load() {
			close(t.done)
		}
	}
	return t.done
}

// Err implements context.Context: context.Canceled once the leadership
// has ended.
func (t *leaderTerm) Err() error {
	if t.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

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

// AfterFunc arranges for f to run once the leader context is cancelled
// (at once, on a goroutine of its own, if it already is); stop removes it,
// reporting whether it did so before f was started. The context package
// uses it for contexts derived from a leader context.
func (t *leaderTerm) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	t.cmu.Lock()
	if t.cancelled.Load() {
		t.cmu.Unlock()
		go f()
		return func() bool { return false }
	}
	t.afters = append(t.afters, a)
	t.cmu.Unlock()
	return func() bool {
		t.cmu.Lock()
		defer t.cmu.Unlock()
		for i, x := range t.afters {
			if x == a {
				t.afters = slices.Delete(t.afters, i, i+1)
				if len(t.afters) == 0 {
					t.afters = nil
				}
				return true
			}
		}
		return false
	}
}

// cancel cancels the leader context, once: it closes Done (if made) and
// runs the AfterFunc functions (which give up a renewal waiting in a batch).
func (t *leaderTerm) cancel() {
	t.cmu.Lock()
	if t.cancelled.Load() {
		t.cmu.Unlock()
		return
	}
	t.cancelled.Store(true)
	if t.done != nil {
		close(t.done)
	}
	fs := t.afters
	t.afters = nil
	t.cmu.Unlock()
	for _, a := range fs {
		a.f()
	}
}

// afterFunc is one function registered with a leader context's AfterFunc.
type afterFunc struct{ f func() }

// renewalCut is what a renewal of a leadership in flight waits under,
// besides its own renew deadline: it is cut when the leadership ends
// (leaderTerm.end: by the timer at the renew deadline, or a step-down, such as
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
