package fxelection

import (
	"context"
	"errors"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
	"github.com/fxelection/fxelection/fxelection/internal/names"
)

// Priorities (Config.Candidacy: Priority, PriorityGrace, Preempt, MinTenure).
//
// A candidate's priority travels in its lease record (MetaPriority), so
// followers learn the leader's from every attempt. Two rules use it:
//
//   - Grace. A candidate that saw a candidate of higher priority within
//     the last LeaseDuration + PriorityGrace (as leader, or asking to
//     preempt) does not take a free lease at once: it reads the record
//     instead of acquiring, and takes the lease only once it has found it
//     free for PriorityGrace, so that the higher one, if it is still
//     there, gets it first.
//   - Preemption (opt-in, Preempt on both sides). A follower whose priority
//     is above the leader's holds a request record, the election
//     "<Name>#preempt", whose record carries its priority; a leader that
//     has led for MinTenure reads that record after each successful
//     renewal and, when its holder's priority is above its own, hands the
//     lease over to it (ResignTo; handover.ReasonPreempted). Leadership only ever
//     moves up the order of priorities, and at most once per MinTenure, so
//     it cannot flap between two candidates; equal priorities never
//     preempt.
//
// Every candidate follows the grace rule (graceRule: an attemptGate and a
// leaderSeer, sharing no state but Elector.prio, made on first need);
// preemption (preemptRule: a refusalRule and a renewalRule) only with
// Config.Candidacy.Preempt.

// graceRule is the grace rule.
type graceRule struct{}

// sawLeader records a sight of a candidate of higher priority.
func (graceRule) sawLeader(e *Elector, l Lease) {
	if l.Holder == e.cfg.Identity || priorityOf(l) <= e.cfg.Candidacy.Priority {
		return
	}
	p := e.prio.Load()
	if p == nil {
		e.prio.CompareAndSwap(nil, &priorityState{})
		p = e.prio.Load()
	}
	p.mu.Lock()
	p.higherSeen = time.Now()
	p.mu.Unlock()
}

// beforeAttempt asks for a look while a candidate of higher priority was
// seen recently enough that this one must not take a free lease at once.
func (graceRule) beforeAttempt(e *Elector) attemptMode {
	p := e.prio.Load()
	if p == nil {
		return modeAcquire
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.higherSeen
	if !seen.IsZero() && time.Since(seen) < e.cfg.LeaseDuration+e.cfg.Candidacy.PriorityGrace {
		return modeLook
	}
	return modeAcquire
}

// afterLook lets the attempt take the lease once it has been found free
// for PriorityGrace: the higher one did not come.
func (graceRule) afterLook(e *Elector, err error) bool {
	p := e.prio.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !errors.Is(err, backendkit.ErrNoLease) {
		p.freeSince = time.Time{}
		return false
	}
	now := time.Now()
	if p.freeSince.IsZero() {
		p.freeSince = now
	}
	if now.Sub(p.freeSince) >= e.cfg.Candidacy.PriorityGrace {
		p.freeSince = time.Time{}
		return true
	}
	return false
}

// preemptRule is preemption (Config.Candidacy.Preempt).
type preemptRule struct{}

// refused is a follower's step after finding leader holding the lease:
// with a priority above the leader's, it holds (or renews) the election's
// preemption request record. Its outcome is reported as an operation
// event; a store failure is not an error of the campaign (the next
// attempt asks again).
func (preemptRule) refused(e *Elector, leader Lease) {
	if leader.Holder == e.cfg.Identity || e.cfg.Candidacy.Priority <= priorityOf(leader) {
		return
	}
	start := time.Now()
	ctx, end := e.opContext(e.base, start.Add(e.cfg.RenewDeadline))
	defer end()
	req := e.acquireRequest()
	req.Election = names.Preempt(req.Election)
	_, err := e.backend.Acquire(ctx, req)
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: handover.OpPreempt, Duration: time.Since(start), Err: err})
	var held *backendkit.HeldError
	if errors.As(err, &held) {
		graceRule{}.sawLeader(e, held.Holder) // another asks, perhaps of higher priority
	}
}

// renewed asks the leader of t to hand over after a successful renewal
// once t has lasted MinTenure and the holder of the preemption request
// record has a priority above this candidate's.
func (preemptRule) renewed(e *Elector, t *leaderTerm) (request, bool) {
	if time.Since(t.since) < e.cfg.Candidacy.MinTenure {
		return request{}, false
	}
	start := time.Now()
	ctx, end := e.opContext(e.base, t.Expiry())
	req, err := e.backend.Get(ctx, names.Preempt(e.cfg.Name))
	end()
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: backendkit.OpGet, Duration: time.Since(start), Err: err})
	if err != nil || req.Holder == e.cfg.Identity || priorityOf(req) <= e.cfg.Candidacy.Priority {
		return request{}, false
	}
	e.log.Info("preempted: handing over to a candidate of higher priority", "successor", req.Holder)
	return resignRequest(context.WithoutCancel(e.base), handover.ReasonPreempted, true, handOverTo(e, req.Holder)), true
}
