package fxelection

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

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
