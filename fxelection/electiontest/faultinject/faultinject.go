// Package faultinject wraps an fxelection.Backend to inject faults: store
// failures, delays, hangs, calls that ignore their context, and network
// partitions that also drop push wake-ups. Tests use it (the end-to-end
// part of package electiontest's conformance suite runs its electors
// through it), and so can programs: it does not import package testing, so
// a demo or a chaos drill can cut an elector off its store at run time.
//
//	b := faultinject.New(memory.New())
//	e, _ := fxelection.New(cfg, b)
//	…
//	b.Partition(true)  // the elector loses its store; its leadership ends
//	b.Partition(false) // healed
package faultinject

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// ErrInjected is the store failure a Backend returns while partitioned.
var ErrInjected = errors.New("faultinject: injected store failure")

// Backend wraps an fxelection.Backend and injects faults: failures,
// delays, hangs and wedges, per operation or for all. It is safe for
// concurrent use. While every operation fails (Partition, or Fail with
// op ""), hangs or is wedged, push wake-ups from the wrapped backend are
// dropped too, as a network partition would drop them.
type Backend struct {
	inner fxelection.Backend

	mu    sync.Mutex
	fail  map[string]error // op ("" = all) → error
	delay time.Duration
	hang  bool
	wedge map[string]chan struct{} // op ("" = all) → closed by Wedge(op, false)
	calls map[string]int
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.Notifier     = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)

	_ backendkit.MinDurationer        = (*Backend)(nil)
	_ backendkit.RenewDeadlineLimiter = (*Backend)(nil)
)

// New wraps inner; it passes every call through until told otherwise.
func New(inner fxelection.Backend) *Backend {
	return &Backend{inner: inner, fail: map[string]error{}, wedge: map[string]chan struct{}{}, calls: map[string]int{}}
}

// Fail makes operation op (backendkit.OpAcquire, …; "" for all) return err.
// A nil err clears it.
func (f *Backend) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, op)
		return
	}
	f.fail[op] = err
}

// Partition makes every operation fail with ErrInjected (on) or heals it.
func (f *Backend) Partition(on bool) {
	if on {
		f.Fail("", ErrInjected)
	} else {
		f.Fail("", nil)
	}
}

// Delay adds d before every operation.
func (f *Backend) Delay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// Hang makes every operation block until its context is done (on), as a
// store that accepts connections but never answers.
func (f *Backend) Hang(on bool) {
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
func (f *Backend) Wedge(op string, on bool) {
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
func (f *Backend) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// BackendName returns the wrapped backend's name ("custom" if it has none,
// as the elector would call it).
func (f *Backend) BackendName() string {
	if n, ok := f.inner.(backendkit.NamedBackend); ok {
		return n.BackendName()
	}
	return "custom"
}

func (f *Backend) before(ctx context.Context, op string) error {
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
func (f *Backend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := f.before(ctx, backendkit.OpAcquire); err != nil {
		return fxelection.Lease{}, err
	}
	return f.inner.Acquire(ctx, req)
}

// Renew implements fxelection.Backend.
func (f *Backend) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if err := f.before(ctx, backendkit.OpRenew); err != nil {
		return fxelection.Lease{}, err
	}
	return f.inner.Renew(ctx, l)
}

// Release implements fxelection.Backend.
func (f *Backend) Release(ctx context.Context, l fxelection.Lease) error {
	if err := f.before(ctx, backendkit.OpRelease); err != nil {
		return err
	}
	return f.inner.Release(ctx, l)
}

// Get implements fxelection.Backend.
func (f *Backend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := f.before(ctx, backendkit.OpGet); err != nil {
		return fxelection.Lease{}, err
	}
	return f.inner.Get(ctx, election)
}

// Transfer implements backendkit.Transferer by forwarding (an error
// matching errors.ErrUnsupported when the wrapped backend cannot); faults
// set for OpRelease apply to it.
func (f *Backend) Transfer(ctx context.Context, l fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := f.before(ctx, backendkit.OpRelease); err != nil {
		return fxelection.Lease{}, err
	}
	return backendkit.Transfer(ctx, f.inner, l, req)
}

// MinLeaseDuration implements backendkit.MinDurationer by forwarding: the
// wrapped backend's minimum lease, 0 if it states none.
func (f *Backend) MinLeaseDuration() time.Duration { return backendkit.MinLeaseDuration(f.inner) }

// RenewDeadlineLimit implements backendkit.RenewDeadlineLimiter by
// forwarding: the wrapped backend's limit, 0 if it states none.
func (f *Backend) RenewDeadlineLimit() (time.Duration, string) {
	if l, ok := f.inner.(backendkit.RenewDeadlineLimiter); ok {
		return l.RenewDeadlineLimit()
	}
	return 0, ""
}

// Subscribe implements backendkit.Notifier by forwarding to the wrapped
// backend, if it is one; wake-ups are dropped while every operation fails,
// hangs or is wedged.
func (f *Backend) Subscribe(election string, wake func()) func() {
	n, ok := f.inner.(backendkit.Notifier)
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
