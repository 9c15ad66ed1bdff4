package fxelection

import (
	"context"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// The elector's store calls that the loop, hand-overs and the priority
// rules share: their contexts, the request to Acquire, a release.

// opContext returns the context of one backend call of the loop: parent's
// values and cancellation, ending at deadline (none when zero), and
// cancelled when Stop begins. Call end when the call has returned.
func (e *Elector) opContext(parent context.Context, deadline time.Time) (ctx context.Context, end func()) {
	var cancel context.CancelFunc
	if deadline.IsZero() {
		ctx, cancel = context.WithCancel(parent)
	} else {
		ctx, cancel = context.WithDeadline(parent, deadline)
	}
	e.mu.Lock()
	if e.halted.Load() {
		cancel()
	} else {
		e.opCancel = cancel
	}
	e.mu.Unlock()
	return ctx, func() {
		e.mu.Lock()
		e.opCancel = nil
		e.mu.Unlock()
		cancel()
	}
}

// acquireRequest is the elector's request to Acquire now.
func (e *Elector) acquireRequest() backendkit.AcquireRequest {
	e.mu.Lock()
	inc := e.incarnation
	e.mu.Unlock()
	return backendkit.AcquireRequest{
		Election: e.cfg.Name, Identity: e.cfg.Identity, Metadata: e.reqMeta, Duration: e.cfg.LeaseDuration,
		Incarnation: inc,
	}
}

// release gives the lease back, reporting a store failure.
func (e *Elector) release(ctx context.Context, l Lease) error {
	start := time.Now()
	err := redactErr(e.backend.Release(ctx, l))
	e.observe(Event{Kind: EventOperation, Op: OpRelease, Duration: time.Since(start), Err: err})
	if err != nil {
		e.fail(OpRelease, err)
		return &OpError{Election: e.cfg.Name, Op: OpRelease, Err: err}
	}
	e.contact()
	e.log.Debug("lease released", "term", l.Term)
	return nil
}
