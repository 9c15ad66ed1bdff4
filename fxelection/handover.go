package fxelection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
)

// Hand-over: ResignTo, and preemption's hand-over (priority.go).
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

// ResignTo gives up leadership, as Resign does, and hands the lease to the
// candidate named successor: the lease is replaced by a hint record held
// by successor's identity (with handover.MetaFrom set to this candidate's),
// which successor takes at its next attempt — at once when the backend
// pushes wake-ups, else within 1.2 × its RetryPeriod — with a higher term.
// Other candidates find the lease held meanwhile. If successor does not
// take it (it is not running, or not a candidate of this election), the
// hint expires after LeaseDuration and any candidate may then take it:
// a successor that never comes delays the election by LeaseDuration (and
// a candidate's next attempt), as a leader that dies does. With
// priorities it can be LeaseDuration + PriorityGrace: a candidate that
// saw a higher priority than its own lead (this leader's, when it then
// stops) waits until it has found the lease free for PriorityGrace.
//
// What it cannot promise. Every backend of this repository implements
// backendkit.Transferer, so that no other candidate can take the lease
// between the leader's lease and the hint. On one that does not (a third-party backend, a wrapper) the lease is
// released first and the hint written just after, so a candidate whose
// attempt lands in between may take the free lease; that candidate then
// leads and the hint is not written
// (the outcome is reported to observers as a handover.Event whose Err
// matches ErrLeaseHeld). If successor itself took the free lease in
// between, the hint is not written either: it leads already. Candidates
// that defer (Config.Candidacy.Defer) never take a free lease, so in a fleet where
// every other candidate defers the hand-over always reaches successor. A
// leader paused past its lease cannot hand over: its lease has expired or
// moved on, and the hand-over writes nothing (ErrLeaseLost is not
// returned: the leadership had ended anyway).
//
// It does nothing if this candidate does not lead. The error is a store
// failure (an *OpError), ctx's error, or handover.ErrBadSuccessor.
func (e *Elector) ResignTo(ctx context.Context, successor string) error {
	if successor == e.cfg.Identity {
		return fmt.Errorf("%w: it is this candidate", handover.ErrBadSuccessor)
	}
	if err := (backendkit.AcquireRequest{Election: e.cfg.Name, Identity: successor, Duration: e.cfg.LeaseDuration}).Validate(); err != nil {
		return fmt.Errorf("%w: %w", handover.ErrBadSuccessor, err)
	}
	r, err := e.send(ctx, resignRequest(ctx, "", true, handOverTo(e, successor)))
	if err != nil {
		return err
	}
	return r.err
}

// handOver is a resign's way of giving the lease back (request.giveBack)
// that hands it to successor.
type handOver struct {
	e         *Elector
	successor string
}

// handOverTo returns the giveBack of a resign handing the lease to
// successor.
func handOverTo(e *Elector, successor string) func(context.Context, Lease) error {
	return handOver{e: e, successor: successor}.giveBack
}

// hintRequest is the Acquire request of the hint record: the successor's
// identity under no incarnation, so that the successor (whose requests
// name one) takes it with a higher term, and so that if the successor
// holds the lease already the write keeps its term.
func (h handOver) hintRequest() backendkit.AcquireRequest {
	e := h.e
	return backendkit.AcquireRequest{
		Election: e.cfg.Name, Identity: h.successor, Duration: e.cfg.LeaseDuration,
		Metadata: map[string]string{handover.MetaFrom: e.cfg.Identity},
	}
}

// giveBack ends lease, whose leadership has ended, and writes the hint
// record naming the successor; it reports the outcome as a handover.Event.
func (h handOver) giveBack(ctx context.Context, lease Lease) error {
	e, successor := h.e, h.successor
	start := time.Now()
	req := h.hintRequest()
	var (
		hint Lease
		err  error
	)
	transferred := false
	if _, ok := e.backend.(backendkit.Transferer); ok {
		end := e.during(handover.OpHandOver)
		hint, err = backendkit.Transfer(ctx, e.backend, lease, req)
		end()
		transferred = !errors.Is(err, errors.ErrUnsupported)
		err = redactErr(err)
		switch {
		case errors.Is(err, backendkit.ErrLeaseLost):
			// No longer ours: nothing to hand over.
			e.observe(Event{Kind: eventHandOver, Duration: time.Since(start), Err: backendkit.ErrLeaseLost})
			return nil
		case transferred && err != nil:
			// Refused (a term counter at its end, a foreign value) or a
			// store failure: still give the lease back, so that it does
			// not stay held by a leadership that has ended.
			e.observe(Event{Kind: eventHandOver, Duration: time.Since(start), Err: err})
			e.fail(handover.OpHandOver, err)
			_ = e.release(ctx, lease) // reported by release
			return &OpError{Election: e.cfg.Name, Op: handover.OpHandOver, Err: err}
		}
	}
	if !transferred {
		if err = e.release(ctx, lease); err != nil {
			e.observe(Event{Kind: eventHandOver, Lease: Lease{Election: e.cfg.Name, Holder: successor}, Duration: time.Since(start), Err: err})
			return err
		}
		end := e.during(handover.OpHandOver)
		hint, err = h.writeHint(ctx, req)
		end()
	}
	e.observe(Event{Kind: eventHandOver, Lease: hint.Clone(), Duration: time.Since(start), Err: err})
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
		e.fail(handover.OpHandOver, err)
		return &OpError{Election: e.cfg.Name, Op: handover.OpHandOver, Err: err}
	}
}

// writeHint writes the hint record after the release, unless the lease
// was taken meanwhile: by successor (then the hint is not needed: it
// returns successor's lease) or by another (a *HeldError). The read
// first keeps the write from rewriting a successor's fresh record; a
// successor whose Acquire lands between the read and the write keeps its
// term, but its record then carries the hint's metadata.
func (h handOver) writeHint(ctx context.Context, req backendkit.AcquireRequest) (Lease, error) {
	e := h.e
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
