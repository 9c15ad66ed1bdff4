package fxelection

import (
	"context"
	"errors"
	"maps"

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
		mailbox: mailbox{mail: make(chan struct{}, 1)},

		incarnation: backendkit.NewIncarnation(),
		reqMeta:     requestMetadata(cfg),
	}
	e.pol = newPolicies(cfg)
	return e, nil
}

// New returns an Elector for cfg in the group, as New does for one on its
// own.
func (g *Group) New(cfg Config) (*Elector, error) {
	e, err := New(cfg, g.backend)
	if err != nil {
		return nil, err
	}
	e.group = g
	return e, nil
}

// defaultPolicies are the policies of an elector whose Config sets none:
// the grace rule of priorities, which every candidate follows and which
// keeps no state until it is needed, shared by all such electors.
var defaultPolicies = newPolicySet(graceRule{})

// newPolicies returns the policies cfg asks for, in the order they are
// consulted: health first (an unhealthy candidate asks no other gate),
// then Defer, the grace rule and preemption.
func newPolicies(cfg Config) *policies {
	if cfg.Health.Check == nil && cfg.Candidacy.Defer == nil && !cfg.Candidacy.Preempt {
		return defaultPolicies
	}
	var list []any
	if cfg.Health.Check != nil {
		h := &healthPolicy{} // unhealthy until a first check succeeds
		list = append(list, h)
	}
	if cfg.Candidacy.Defer != nil {
		list = append(list, deferPolicy{deferring: cfg.Candidacy.Defer})
	}
	list = append(list, graceRule{})
	if cfg.Candidacy.Preempt {
		list = append(list, preemptRule{})
	}
	return newPolicySet(list...)
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
	r, err := e.send(ctx, request{kind: reqTryAcquire, ctx: ctx, reply: make(chan result, 1)})
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
	r, err := e.send(ctx, resignRequest(ctx, "", true, nil))
	if err != nil {
		return err
	}
	return r.err
}
