package fxelection

import (
	"context"
	"errors"
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
	e.observe(Event{Kind: EventOperation, Op: backendkit.OpRelease, Duration: time.Since(start), Err: err})
	if err != nil {
		e.fail(backendkit.OpRelease, err)
		return &OpError{Election: e.cfg.Name, Op: backendkit.OpRelease, Err: err}
	}
	e.contact()
	e.log.Debug("lease released", "term", l.Term)
	return nil
}

// look is an attempt that only reads the record: one Get. It returns nil
// when the record is held by this candidate's identity (a hint handed to
// it, or its own record from before), for the attempt to take it with
// Acquire; else a *HeldError naming the holder, an error matching
// ErrNoLease for a free lease, context.Canceled once Stop began, or a
// store failure.
func (e *Elector) look(start time.Time) error {
	ctx, end := e.opContext(e.base, start.Add(e.cfg.RenewDeadline))
	endOp := e.during(backendkit.OpGet)
	cur, err := e.backend.Get(ctx, e.cfg.Name)
	endOp()
	end()
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: backendkit.OpGet, Duration: time.Since(start), Err: err})
	switch {
	case err == nil && cur.Holder == e.cfg.Identity:
		e.contact()
		return nil
	case err == nil:
		e.contact()
		e.observeLeader(cur)
		return &backendkit.HeldError{Holder: cur}
	case errors.Is(err, backendkit.ErrNoLease):
		e.contact()
		return err
	case e.halted.Load():
		return context.Canceled
	default:
		e.fail(backendkit.OpGet, err)
		return err
	}
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
	end := e.during(backendkit.OpAcquire)
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
	e.observe(Event{Kind: EventOperation, Op: backendkit.OpAcquire, Duration: time.Since(start), Err: err})
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
		e.fail(backendkit.OpAcquire, err)
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
	end := e.during(backendkit.OpRelease)
	_ = e.release(rctx, l) // reported by release
	end()
}
