// Package electiontest is the conformance suite every fxelection.Backend
// runs (RunBackendTests), a Watcher test for real stores (RunWatcherTest),
// plus helpers for users' own tests: a fault injecting Backend wrapper, a
// recorder of leadership intervals and a recorder of a Watcher's changes.
package electiontest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// ErrInjected is the store failure a Faulty backend returns while failing.
var ErrInjected = errors.New("electiontest: injected store failure")

// Faulty wraps a Backend and injects faults: failures, delays and hangs,
// per operation or for all. It is safe for concurrent use. While failing
// (Partition), push wake-ups from the wrapped backend are suppressed too,
// as a network partition would.
type Faulty struct {
	inner fxelection.Backend

	mu    sync.Mutex
	fail  map[string]error // op ("" = all) → error
	delay time.Duration
	hang  bool
	wedge map[string]chan struct{} // op ("" = all) → closed by Wedge(op, false)
	calls map[string]int
}

var (
	_ fxelection.Backend      = (*Faulty)(nil)
	_ fxelection.Notifier     = (*Faulty)(nil)
	_ fxelection.NamedBackend = (*Faulty)(nil)
)

// NewFaulty wraps inner; it passes every call through until told otherwise.
func NewFaulty(inner fxelection.Backend) *Faulty {
	return &Faulty{inner: inner, fail: map[string]error{}, wedge: map[string]chan struct{}{}, calls: map[string]int{}}
}

// Fail makes operation op (fxelection.OpAcquire, …; "" for all) return err.
// A nil err clears it.
func (f *Faulty) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, op)
		return
	}
	f.fail[op] = err
}

// Partition makes every operation fail with ErrInjected (on) or heals it.
func (f *Faulty) Partition(on bool) {
	if on {
		f.Fail("", ErrInjected)
	} else {
		f.Fail("", nil)
	}
}

// Delay adds d before every operation.
func (f *Faulty) Delay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// Hang makes every operation block until its context is done (on), as a
// store that accepts connections but never answers.
func (f *Faulty) Hang(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang = on
}

// Wedge makes operation op ("" for all) block while on, ignoring its
// context, as an SDK that does not abort a blocked read when its context is
// cancelled (go-redis honours only deadlines). Wedge(op, false) lets the
// blocked calls go on to the wrapped backend (or return their context's
// error if it is done); tests must call it before they end so that no
// goroutine stays blocked.
func (f *Faulty) Wedge(op string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, wedged := f.wedge[op]
	switch {
	case on && !wedged:
		f.wedge[op] = make(chan struct{})
	case !on && wedged:
		close(ch)
		delete(f.wedge, op)
	}
}

// Calls returns how many times op has been called.
func (f *Faulty) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// BackendName returns the wrapped backend's name ("custom" if it has none,
// as the elector would call it).
func (f *Faulty) BackendName() string {
	if n, ok := f.inner.(fxelection.NamedBackend); ok {
		return n.BackendName()
	}
	return "custom"
}

func (f *Faulty) before(ctx context.Context, op string) error {
	f.mu.Lock()
	f.calls[op]++
	delay, hang := f.delay, f.hang
	err := f.fail[op]
	if err == nil {
		err = f.fail[""]
	}
	wedges := []chan struct{}{f.wedge[op], f.wedge[""]}
	f.mu.Unlock()
	waited := false
	for _, w := range wedges {
		if w != nil {
			<-w // deliberately ignores ctx
			waited = true
		}
	}
	if waited && ctx.Err() != nil {
		return ctx.Err()
	}
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// Acquire implements fxelection.Backend.
func (f *Faulty) Acquire(ctx context.Context, req fxelection.AcquireRequest) (fxelection.Lease, error) {
	if err := f.before(ctx, fxelection.OpAcquire); err != nil {
		return fxelection.Lease{}, err
	}
	return f.inner.Acquire(ctx, req)
}

// Renew implements fxelection.Backend.
func (f *Faulty) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if err := f.before(ctx, fxelection.OpRenew); err != nil {
		return fxelection.Lease{}, err
	}
	return f.inner.Renew(ctx, l)
}

// Release implements fxelection.Backend.
func (f *Faulty) Release(ctx context.Context, l fxelection.Lease) error {
	if err := f.before(ctx, fxelection.OpRelease); err != nil {
		return err
	}
	return f.inner.Release(ctx, l)
}

// Get implements fxelection.Backend.
func (f *Faulty) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := f.before(ctx, fxelection.OpGet); err != nil {
		return fxelection.Lease{}, err
	}
	return f.inner.Get(ctx, election)
}

// Subscribe implements fxelection.Notifier by forwarding to the wrapped
// backend, if it is one; wake-ups are dropped while all operations fail.
func (f *Faulty) Subscribe(election string, wake func()) func() {
	n, ok := f.inner.(fxelection.Notifier)
	if !ok {
		return func() {}
	}
	return n.Subscribe(election, func() {
		f.mu.Lock()
		cut := f.fail[""] != nil || f.hang || f.wedge[""] != nil
		f.mu.Unlock()
		if !cut {
			wake()
		}
	})
}

// Interval is one period during which an elector believed it led.
type Interval struct {
	Identity string
	Term     uint64
	Start    time.Time
	End      time.Time // zero while still leading
}

// Recorder records leadership intervals of many electors on one clock, to
// check that no two of them believed they led at the same instant. Attach
// it to each elector with AddObserver.
type Recorder struct {
	mu        sync.Mutex
	intervals []Interval
}

// Observe implements fxelection.Observer.
func (r *Recorder) Observe(ev fxelection.Event) {
	switch ev.Kind {
	case fxelection.EventStartedLeading:
		r.mu.Lock()
		r.intervals = append(r.intervals, Interval{Identity: ev.Identity, Term: ev.Lease.Term, Start: time.Now()})
		r.mu.Unlock()
	case fxelection.EventStoppedLeading:
		now := time.Now()
		r.mu.Lock()
		for i := len(r.intervals) - 1; i >= 0; i-- {
			if r.intervals[i].Identity == ev.Identity && r.intervals[i].End.IsZero() {
				r.intervals[i].End = now
				break
			}
		}
		r.mu.Unlock()
	}
}

// Intervals returns what was recorded, in start order.
func (r *Recorder) Intervals() []Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Interval(nil), r.intervals...)
}

// Overlap returns two intervals that overlap in time, if any. An open
// interval (still leading) extends to now.
func (r *Recorder) Overlap() (a, b Interval, found bool) {
	iv := r.Intervals()
	now := time.Now()
	end := func(x Interval) time.Time {
		if x.End.IsZero() {
			return now
		}
		return x.End
	}
	for i := range iv {
		for j := i + 1; j < len(iv); j++ {
			if iv[i].Start.Before(end(iv[j])) && iv[j].Start.Before(end(iv[i])) {
				return iv[i], iv[j], true
			}
		}
	}
	return Interval{}, Interval{}, false
}
