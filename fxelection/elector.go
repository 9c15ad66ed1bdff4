package fxelection

import (
	"context"
	"fmt"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// IsLeader reports whether this candidate leads now: it holds the lease and
// its last successful renewal started less than RenewDeadline ago.
func (e *Elector) IsLeader() bool {
	_, ok := e.Lease()
	return ok
}

// Lease returns the lease this candidate holds while it is leader.
func (e *Elector) Lease() (Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.believed()
	if t == nil {
		return Lease{}, false
	}
	return t.lease.Clone(), true
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

// Leader returns the current leader as last seen by this candidate — itself
// while leading, otherwise the holder the store reported at the last attempt
// — and false when unknown (before the first answer, or right after losing).
func (e *Elector) Leader() (Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader.Clone(), e.leaderKnown
}

// Status is a snapshot of an elector for health checks and dashboards.
type Status struct {
	Election string
	Identity string
	Backend  string
	// Running is true between Start and Stop while the campaign loop runs.
	Running bool
	// Leading is true while this candidate leads: exactly when IsLeader
	// would say so (the lease is held and the last successful renewal
	// started less than RenewDeadline ago).
	Leading bool
	// Holding is true from an acquisition until the campaign loop has
	// stepped down. It differs from Leading only while the loop is stuck
	// (in a backend call that ignores its context, or in an Observer that
	// blocks) past the renew deadline: the leadership has ended (Leading is
	// false, the leader context is cancelled, OnStoppedLeading is queued
	// and the step-down logged) but the loop has not yet noticed. A
	// liveness probe looks for that.
	Holding bool
	// Lease is this candidate's lease while Leading.
	Lease Lease
	// Leader is the leader last seen; LeaderKnown says whether there is one.
	Leader      Lease
	LeaderKnown bool
	// LastRenew is the start of the last successful acquire or renewal while
	// Holding.
	LastRenew time.Time
	// LastContact is when the store last answered an operation (any outcome
	// but a store failure).
	LastContact time.Time
	// LastError is the last store failure (an *OpError whose message has
	// passed through backendkit.RedactError) and LastErrorAt when it happened.
	LastError   error
	LastErrorAt time.Time
	// InFlight is the backend operation ("acquire", "renew", "release") the
	// campaign loop is waiting for, "" when none, and InFlightSince when
	// that call began. The elector bounds every call by its context
	// (RenewDeadline at most), so a call in flight for much longer means
	// the backend ignores its context and the loop is wedged: leadership
	// has ended (the renew deadline timer does not depend on the loop), but
	// no campaign goes on until the call returns.
	InFlight      string
	InFlightSince time.Time
	// Healthy is false while Config.HealthCheck keeps this candidate from
	// campaigning (before its first success, and from HealthThreshold
	// failures in a row); always true without a HealthCheck. HealthError
	// is the last failed check's error, nil after a success.
	Healthy     bool
	HealthError error
	// LeaseDuration, RenewDeadline and RetryPeriod are the effective timings.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Status returns a snapshot of the elector's state.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Status{
		Election: e.cfg.Name, Identity: e.cfg.Identity, Backend: e.kind,
		Leader: e.leader.Clone(), LeaderKnown: e.leaderKnown,
		LastContact: e.lastContact,
		Healthy:     e.healthy.Load(), HealthError: e.healthErr,
		LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline, RetryPeriod: e.cfg.RetryPeriod,
	}
	if e.started && !e.stopped {
		e.evMu.Lock()
		s.Running = !e.loopEnded
		e.evMu.Unlock()
	}
	if f := e.lastFail; f != nil {
		s.LastError, s.LastErrorAt = f.err, f.at
	}
	if t := e.term; t != nil {
		s.Holding, s.LastRenew = true, t.lastRenew
	}
	if t := e.believed(); t != nil {
		s.Leading, s.Lease = true, t.lease.Clone()
	}
	if in := e.inflight.Load(); in != nil {
		s.InFlight, s.InFlightSince = in.op, in.since
	}
	return s
}

// RunIfLeader runs fn only if this candidate leads, and reports whether it
// ran. fn's context is cancelled the moment leadership ends (or ctx is done)
// and carries the lease for fencing (LeaseFromContext): guards use its term
// (package fence), whatever token ctx carried. Stop waits for fn to
// return before releasing the lease.
func (e *Elector) RunIfLeader(ctx context.Context, fn func(ctx context.Context) error) (ran bool, err error) {
	e.mu.Lock()
	t := e.believed()
	if t == nil {
		e.mu.Unlock()
		return false, nil
	}
	lease := t.lease.Clone()
	e.work.add()
	e.mu.Unlock()
	defer e.work.done()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := t.AfterFunc(cancel)
	defer stop()
	return true, fn(backendkit.ContextWithLease(wctx, lease))
}

// TryAcquire makes one attempt to acquire the lease now, without waiting for
// the next retry, and reports whether this candidate leads afterwards. The
// elector must be running. A lease held by someone else is not an error.
func (e *Elector) TryAcquire(ctx context.Context) (bool, error) {
	r, err := e.send(ctx, reqTryAcquire)
	if err != nil {
		return false, err
	}
	return r.leading, r.err
}

// Resign gives up leadership now: it cancels the leader context, waits for
// leader work (bounded by ctx), releases the lease and sits out two retry
// periods so another candidate can take over. It does nothing if this
// candidate does not lead.
func (e *Elector) Resign(ctx context.Context) error {
	r, err := e.send(ctx, reqResign)
	if err != nil {
		return err
	}
	return r.err
}

func (e *Elector) send(ctx context.Context, kind requestKind) (result, error) {
	e.mu.Lock()
	running := e.started && !e.stopped
	e.mu.Unlock()
	if !running {
		return result{}, ErrNotRunning
	}
	return e.ask(ctx, kind)
}

// ResignTo gives up leadership, as Resign does, and hands the lease to the
// candidate named successor: the lease is replaced by a hint record held
// by successor's identity (with MetaHandOverFrom set to this candidate's),
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
// (the outcome is reported to observers as an EventHandOver whose Err
// matches ErrLeaseHeld). If successor itself took the free lease in
// between, the hint is not written either: it leads already. Candidates
// that defer (Config.Defer) never take a free lease, so in a fleet where
// every other candidate defers the hand-over always reaches successor. A
// leader paused past its lease cannot hand over: its lease has expired or
// moved on, and the hand-over writes nothing (ErrLeaseLost is not
// returned: the leadership had ended anyway).
//
// It does nothing if this candidate does not lead. The error is a store
// failure (an *OpError), ctx's error, or ErrBadSuccessor.
func (e *Elector) ResignTo(ctx context.Context, successor string) error {
	if successor == e.cfg.Identity {
		return fmt.Errorf("%w: it is this candidate", ErrBadSuccessor)
	}
	if err := (backendkit.AcquireRequest{Election: e.cfg.Name, Identity: successor, Duration: e.cfg.LeaseDuration}).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSuccessor, err)
	}
	e.mu.Lock()
	running := e.started && !e.stopped
	e.mu.Unlock()
	if !running {
		return ErrNotRunning
	}
	req := request{kind: reqResignTo, ctx: ctx, reply: make(chan result, 1), to: successor}
	r, err := e.askRequest(ctx, req)
	if err != nil {
		return err
	}
	return r.err
}
