package fxelection

import (
	"context"
	"errors"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Hand-over: ResignTo, and candidates that defer (Config.Defer).
//
// A hand-over goes through the record, not around it: the leader replaces
// its lease with a hint record held by the successor's identity, under no
// incarnation and with a term of its own. Every backend already lets a
// candidate take a live record of its own identity but another
// incarnation at once, with a higher term (the rule that lets a restarted
// process back in), so the successor takes the hint at its next attempt
// and leads with a term above the hint's; everyone else finds the lease
// held and waits, as for any leader. A successor that never comes leaves
// the hint to expire after LeaseDuration, like a leader that died, and
// then anyone may take it. No backend needed a change for it; a backend
// that implements backendkit.Transferer writes the hint in the same atomic
// step that ends the leader's lease, while the others release first and
// write the hint just after (see ResignTo for what that cannot promise).

// MetaHandOverFrom is the metadata key of a hand-over hint record: its
// value is the identity of the leader that wrote it. The hint's holder is
// the successor.
const MetaHandOverFrom = "fxelection.handover-from"

// ErrBadSuccessor is what ResignTo returns for a successor that is this
// candidate itself or not a valid identity.
var ErrBadSuccessor = errors.New("fxelection: ResignTo: bad successor")

// hintRequest is the Acquire request of a hint record handing election to
// successor: the successor's identity under no incarnation, so that the
// successor (whose requests name one) takes it with a higher term, and so
// that if the successor holds the lease already the write keeps its term.
func (e *Elector) hintRequest(successor string) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{
		Election: e.cfg.Name, Identity: successor, Duration: e.cfg.LeaseDuration,
		Metadata: map[string]string{MetaHandOverFrom: e.cfg.Identity},
	}
}

// handOver ends lease, whose leadership has ended, and writes the hint
// record naming successor; it reports the outcome as an EventHandOver.
func (e *Elector) handOver(ctx context.Context, lease Lease, successor string) error {
	start := time.Now()
	req := e.hintRequest(successor)
	var (
		hint Lease
		err  error
	)
	transferred := false
	if _, ok := e.backend.(backendkit.Transferer); ok {
		end := e.during(OpHandOver)
		hint, err = backendkit.Transfer(ctx, e.backend, lease, req)
		end()
		transferred = !errors.Is(err, errors.ErrUnsupported)
		err = redactErr(err)
		switch {
		case errors.Is(err, backendkit.ErrLeaseLost):
			// No longer ours: nothing to hand over.
			e.observe(Event{Kind: EventHandOver, Duration: time.Since(start), Err: backendkit.ErrLeaseLost})
			return nil
		case transferred && err != nil:
			// Refused (a term counter at its end, a foreign value) or a
			// store failure: still give the lease back, so that it does
			// not stay held by a leadership that has ended.
			e.observe(Event{Kind: EventHandOver, Duration: time.Since(start), Err: err})
			e.fail(OpHandOver, err)
			_ = e.release(ctx, lease) // reported by release
			return &OpError{Election: e.cfg.Name, Op: OpHandOver, Err: err}
		}
	}
	if !transferred {
		if err = e.release(ctx, lease); err != nil {
			e.observe(Event{Kind: EventHandOver, Lease: Lease{Election: e.cfg.Name, Holder: successor}, Duration: time.Since(start), Err: err})
			return err
		}
		end := e.during(OpHandOver)
		hint, err = e.writeHint(ctx, req)
		end()
	}
	e.observe(Event{Kind: EventHandOver, Lease: hint.Clone(), Duration: time.Since(start), Err: err})
	switch {
	case err == nil:
		e.contact()
		e.observeLeader(hint) // followers see the successor: so does this one
		e.log.Info("lease handed over", "successor", successor, "term", hint.Term)
		return nil
	case !backendkit.IsStoreFailure(err):
		e.contact()
		var held *backendkit.HeldError
		if errors.As(err, &held) {
			e.log.Info("hand-over overtaken: another candidate took the lease first", "holder", held.Holder.Holder, "term", held.Holder.Term)
		}
		return nil
	default:
		e.fail(OpHandOver, err)
		return &OpError{Election: e.cfg.Name, Op: OpHandOver, Err: err}
	}
}

// writeHint writes the hint record after the release, unless the lease
// was taken meanwhile: by successor (then the hint is not needed: it
// returns successor's lease) or by another (a *HeldError). The read
// first keeps the write from rewriting a successor's fresh record; a
// successor whose Acquire lands between the read and the write keeps its
// term, but its record then carries the hint's metadata.
func (e *Elector) writeHint(ctx context.Context, req backendkit.AcquireRequest) (Lease, error) {
	cur, err := e.backend.Get(ctx, req.Election)
	switch {
	case err == nil && cur.Holder == req.Identity:
		return cur, nil
	case err == nil:
		return Lease{}, &backendkit.HeldError{Holder: cur}
	case !errors.Is(err, backendkit.ErrNoLease):
		return Lease{}, redactErr(err)
	}
	l, err := e.backend.Acquire(ctx, req)
	return l, redactErr(err)
}

// deferring reports whether Config.Defer asks this candidate to leave a
// free lease to others now.
func (e *Elector) deferring() bool {
	d := e.cfg.Candidacy.Defer
	if d == nil {
		return false
	}
	defer func() { _ = recover() }() // a Defer that panics does not defer
	return d()
}

// look is a deferring candidate's attempt: one Get. It returns nil when the
// record is held by this candidate's identity (a hint handed to it, or its
// own record from before), for the attempt to take it with Acquire; else
// a *HeldError naming the holder, an error matching ErrNoLease for a free
// lease, context.Canceled once Stop began, or a store failure.
func (e *Elector) look(start time.Time) error {
	ctx, end := e.opContext(e.base, start.Add(e.cfg.RenewDeadline))
	endOp := e.during(OpGet)
	cur, err := e.backend.Get(ctx, e.cfg.Name)
	endOp()
	end()
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: OpGet, Duration: time.Since(start), Err: err})
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
		e.fail(OpGet, err)
		return err
	}
}
