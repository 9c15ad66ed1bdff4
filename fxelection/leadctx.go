package fxelection

import (
	"context"
	"slices"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

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
