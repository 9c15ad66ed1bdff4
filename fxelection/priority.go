package fxelection

import (
	"errors"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/names"
)

// Priorities (Config.Priority, PriorityGrace, Preempt, MinTenure).
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
//     lease over to it (ResignTo; ReasonPreempted). Leadership only ever
//     moves up the order of priorities, and at most once per MinTenure, so
//     it cannot flap between two candidates; equal priorities never
//     preempt.

// inGrace reports whether a candidate of higher priority was seen recently
// enough that this one must not take a free lease at once.
func (e *Elector) inGrace() bool {
	p := e.prio.Load()
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.higherSeen
	return !seen.IsZero() && time.Since(seen) < e.cfg.LeaseDuration+e.cfg.Candidacy.PriorityGrace
}

// graceOver is called when a grace-waiting attempt found the lease free
// (free) or held (not free): it reports whether the lease has now been
// free for PriorityGrace.
func (e *Elector) graceOver(free bool) bool {
	p := e.prio.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !free {
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

// requestPreemption is a follower's step after finding leader holding the
// lease: with Preempt on and a priority above the leader's, it holds (or
// renews) the election's preemption request record. Its outcome is
// reported as an operation event; a store failure is not an error of the
// campaign (the next attempt asks again).
func (e *Elector) requestPreemption(leader Lease) {
	if !e.cfg.Candidacy.Preempt || leader.Holder == e.cfg.Identity || e.cfg.Candidacy.Priority <= priorityOf(leader) {
		return
	}
	start := time.Now()
	ctx, end := e.opContext(e.base, start.Add(e.cfg.RenewDeadline))
	defer end()
	req := e.acquireRequest()
	req.Election = names.Preempt(req.Election)
	_, err := e.backend.Acquire(ctx, req)
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: OpPreempt, Duration: time.Since(start), Err: err})
	var held *backendkit.HeldError
	if errors.As(err, &held) {
		e.sawLeader(held.Holder) // another asks, perhaps of higher priority
	}
}

// preemptor returns the candidate this leader must hand over to after a
// successful renewal of t, if any: with Preempt on, once t has lasted
// MinTenure, the holder of the preemption request record when its
// priority is above this candidate's.
func (e *Elector) preemptor(t *leaderTerm) (string, bool) {
	if !e.cfg.Candidacy.Preempt || time.Since(t.since) < e.cfg.Candidacy.MinTenure {
		return "", false
	}
	start := time.Now()
	ctx, end := e.opContext(e.base, t.deadline())
	req, err := e.backend.Get(ctx, names.Preempt(e.cfg.Name))
	end()
	err = redactErr(err)
	e.observe(Event{Kind: EventOperation, Op: OpGet, Duration: time.Since(start), Err: err})
	if err != nil || req.Holder == e.cfg.Identity || priorityOf(req) <= e.cfg.Candidacy.Priority {
		return "", false
	}
	return req.Holder, true
}
