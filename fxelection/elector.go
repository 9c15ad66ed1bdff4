package fxelection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// New returns an Elector for cfg on backend. It validates cfg (filling in
// defaults), and RenewDeadline against a backend that limits it
// (backendkit.RenewDeadlineLimiter), and returns an error naming the
// first bad field. It does no I/O.
func New(cfg Config, backend Backend) (*Elector, error) {
	if backend == nil {
		return nil, errors.New("fxelection: Backend is required")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if problem := backendkit.RenewDeadlineProblem(backend, cfg.RenewDeadline); problem != "" {
		return nil, &ConfigError{Field: "RenewDeadline", Reason: problem}
	}
	// The caller keeps its map; later changes to it must not reach leases.
	cfg.Metadata = maps.Clone(cfg.Metadata)
	log := discardLogger
	if cfg.Logger != nil {
		log = cfg.Logger.With("election", cfg.Name, "identity", cfg.Identity)
	}
	e := &Elector{
		cfg:     cfg,
		backend: backend,
		kind:    backendkit.Name(backend),
		log:     log,
		mail:    make(chan struct{}, 1),

		incarnation: backendkit.NewIncarnation(),
		reqMeta:     requestMetadata(cfg),
	}
	e.healthy.Store(cfg.HealthCheck == nil) // unhealthy until a first check succeeds
	return e, nil
}

// Config returns a copy of the configuration in effect, defaults filled in
// (Status has the election, identity and backend name too).
func (e *Elector) Config() Config {
	c := e.cfg
	c.Metadata = maps.Clone(c.Metadata)
	return c
}

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
