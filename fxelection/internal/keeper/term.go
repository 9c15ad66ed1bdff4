package keeper

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Term is the core of holding one lease, shared by every holder: the
// Elector's leadership, a lock's Keeper, a pool's member slot. It runs on
// one timer and no goroutine of its own: the timer fires at the next
// renewal (SetDueLocked) or at the renew deadline (the start of the last
// successful renewal plus the renew deadline), whichever is earlier, and
// calls its Holder, which makes the renewal (on the timer's
// goroutine or handed to another) and report it back (ExtendLocked,
// SetDueLocked). A leader waiting for its next renewal therefore costs a
// timer, not a goroutine: a process runs 100,000 elections.
//
// A Term is also the core of its holder's context: it is cancelled
// (Cancel) when the lease is given up, makes its Done channel only when
// asked and implements AfterFunc, so that contexts derived from it need no
// goroutine. The holder adds Value (and String) to make it a
// context.Context.
//
// Fields marked so are guarded by the Holder's lock (the Elector's own,
// so that its state and the Term's change together).
type Term struct {
	h             Holder
	renewDeadline time.Duration

	// timer fires at due or at the renew deadline, whichever is earlier;
	// see fire.
	timer     *time.Timer
	armed     time.Time // when timer is set to fire (guarded)
	lastRenew time.Time // start of the last successful acquire/renew (guarded)
	due       time.Time // when the timer next calls OnDue; zero when none is set (guarded)
	ended     bool      // EndLocked ran (guarded)
	expired   bool      // the timer found the renew deadline passed (guarded)

	// The context's state.
	cancelled atomic.Bool
	cmu       sync.Mutex
	done      chan struct{} // made by Done on demand
	afters    []*afterFunc  // functions to run when cancelled (AfterFunc)

	// Renewal bounds a renewal in flight: unlike the context, it is not cut
	// when the holder lets go (a renewal in flight is let finish), only at
	// the end (Halt) or by the holder (Cut.Fire).
	Renewal Cut
}

// Holder is a Term's holder: its lock, which guards the Term, and what it
// does when the Term's timer fires. OnDue and OnDeadline are called on the
// timer's goroutine with the lock not held.
type Holder interface {
	sync.Locker
	// OnDue: the renewal set by SetDueLocked is due. The holder makes it
	// (it is free to do so on the calling goroutine) or hands it over.
	OnDue()
	// OnDeadline: no renewal succeeded within the renew deadline; the
	// Term is expired from now on (Over reports true). It is called once.
	OnDeadline()
}

// BeginLocked starts t, a zero Term, for a lease acquired by an attempt
// that began at start: its timer is armed for the renew deadline, and no
// renewal is due until SetDueLocked. The caller holds h's lock, which
// guards t from now on. It is called once.
func (t *Term) BeginLocked(h Holder, renewDeadline time.Duration, start time.Time) {
	t.h, t.renewDeadline, t.lastRenew = h, renewDeadline, start
	t.armed = t.Expiry()
	t.timer = time.AfterFunc(time.Until(t.armed), t.fire)
}

// Expiry is when belief in the lease ends without a renewal: the start of
// the last successful acquire or renewal plus the renew deadline. Called
// with the lock held (or before the Term is shared).
func (t *Term) Expiry() time.Time { return t.lastRenew.Add(t.renewDeadline) }

// LastRenew is the start of the last successful acquire or renewal.
// Called with the lock held.
func (t *Term) LastRenew() time.Time { return t.lastRenew }

// Ended reports that EndLocked ran. Called with the lock held.
func (t *Term) Ended() bool { return t.ended }

// Over reports that the Term ended or its renew deadline passed. Called
// with the lock held.
func (t *Term) Over() bool { return t.ended || t.expired }

// SetDueLocked sets the next renewal for due (OnDue), unless the Term is
// over. Called with the lock held.
func (t *Term) SetDueLocked(due time.Time) {
	t.due = due
	t.rearm(time.Now())
}

// ExtendLocked records a successful renewal that started at start and
// moves the renew deadline; false if the Term is over (the deadline
// passed or it ended while the renewal ran). Called with the lock held.
func (t *Term) ExtendLocked(start time.Time) bool {
	if t.Over() {
		return false
	}
	t.lastRenew = start
	t.rearm(time.Now()) // for the new deadline; SetDueLocked sets the next renewal
	return true
}

// rearm sets the timer for the earlier of the next renewal and the renew
// deadline, unless the Term is over; the caller holds the lock.
func (t *Term) rearm(now time.Time) {
	if t.Over() {
		return
	}
	next := t.Expiry()
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

// fire is the timer. At a renewal's time it calls OnDue and re-arms
// itself for the renew deadline, which keeps running while the renewal is
// in flight. At the deadline it marks the Term expired and calls
// OnDeadline.
func (t *Term) fire() {
	t.h.Lock()
	if t.Over() {
		t.h.Unlock()
		return
	}
	now := time.Now()
	if !now.Before(t.Expiry()) {
		t.expired = true
		t.h.Unlock()
		t.h.OnDeadline()
		return
	}
	renew := !t.due.IsZero() && !now.Before(t.due)
	if renew {
		t.due = time.Time{}
	}
	t.rearm(now)
	t.h.Unlock()
	if renew {
		t.h.OnDue()
	}
}

// Halt stops the timer, cancels the context and cuts a renewal in flight
// (Renewal): the lease is given up. Called without the lock; EndLocked
// marks the end.
func (t *Term) Halt() {
	t.h.Lock() // rearm replaces t.timer under it
	t.timer.Stop()
	t.h.Unlock()
	t.Cancel()
	t.Renewal.Fire()
}

// EndLocked marks the Term ended, once: false if it was already. Called
// with the lock held.
func (t *Term) EndLocked() bool {
	if t.ended {
		return false
	}
	t.ended = true
	t.timer.Stop() // fire may have re-armed it before ended was set
	return true
}

// Deadline implements context.Context: a Term's context has none.
func (t *Term) Deadline() (deadline time.Time, ok bool) { return time.Time{}, false }

// Done implements context.Context.
func (t *Term) Done() <-chan struct{} {
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

// Err implements context.Context: context.Canceled once cancelled.
func (t *Term) Err() error {
	if t.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

// Cancelled reports that the context is cancelled.
func (t *Term) Cancelled() bool { return t.cancelled.Load() }

// AfterFunc arranges for f to run once the context is cancelled (at
// once, on a goroutine of its own, if it already is); stop removes it,
// reporting whether it did so before f was started. The context package
// uses it for contexts derived from the holder's.
func (t *Term) AfterFunc(f func()) (stop func() bool) {
	return addAfter(&t.cmu, func() bool { return t.cancelled.Load() }, &t.afters, f)
}

// Cancel cancels the context, once: it closes Done (if made) and runs the
// AfterFunc functions.
func (t *Term) Cancel() {
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

// Cut is what a renewal in flight waits under, besides its own renew
// deadline: the holder fires it when the renewal must be given up (the
// lease is given up, or a bound for letting it finish ended), but not
// when it lets go of the lease: a renewal cut short may be applied by the
// store all the same, and the lease must be released as the store last
// wrote it (a store that matches the last write on release, as
// PostgreSQL's expires_at, frees nothing otherwise). It has no Done
// channel: Err and AfterFunc are all a renewal needs.
type Cut struct {
	mu     sync.Mutex
	cut    bool
	afters []*afterFunc
}

// Err is context.Canceled once the renewal is cut.
func (c *Cut) Err() error {
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
func (c *Cut) AfterFunc(f func()) (stop func() bool) {
	return addAfter(&c.mu, func() bool { return c.cut }, &c.afters, f)
}

// Fire cuts the renewal in flight, once: it runs the AfterFunc functions
// (which cancel a renewal's context or give up a renewal waiting in a
// batch).
func (c *Cut) Fire() {
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

// afterFunc is one function registered with AfterFunc.
type afterFunc struct{ f func() }

// addAfter registers f in *afters under mu unless done() (then it runs f
// on a goroutine of its own); stop removes it.
func addAfter(mu *sync.Mutex, done func() bool, afters *[]*afterFunc, f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	mu.Lock()
	if done() {
		mu.Unlock()
		go f()
		return func() bool { return false }
	}
	*afters = append(*afters, a)
	mu.Unlock()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i, x := range *afters {
			if x == a {
				*afters = slices.Delete(*afters, i, i+1)
				if len(*afters) == 0 {
					*afters = nil
				}
				return true
			}
		}
		return false
	}
}
