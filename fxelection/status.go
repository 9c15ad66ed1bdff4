package fxelection

import "time"

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
	// Healthy is false while Config.Health.Check keeps this candidate from
	// campaigning (before its first success, and from Health.Threshold
	// failures in a row); always true without a Health.Check. HealthError
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
		LastContact:   e.lastContact,
		Healthy:       true,
		LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline, RetryPeriod: e.cfg.RetryPeriod,
	}
	for _, p := range e.pol.lives {
		if r, ok := p.(interface{ status(*Status) }); ok {
			r.status(&s)
		}
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
		s.Holding, s.LastRenew = true, t.LastRenew()
	}
	if t := e.believed(); t != nil {
		s.Leading, s.Lease = true, t.lease.Clone()
	}
	if in := e.inflight.Load(); in != nil {
		s.InFlight, s.InFlightSince = in.op, in.since
	}
	return s
}
