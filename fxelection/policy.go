package fxelection

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Policies: the rules of candidacy (health gating, Defer, priorities with
// grace and preemption, and what a resign gives the lease back to) sit
// beside the engine, each in a file of its own, and answer at a few fixed
// points of the state machine:
//
//   - before an attempt (attemptGate): acquire, only look at the record,
//     or skip the attempt; after a look, whether to acquire now;
//   - when the store names a leader (leaderSeer), and when an attempt of
//     the campaign is refused (refusalRule);
//   - after a successful renewal (renewalRule): whether to resign, and how;
//   - with Start and Stop (lifeRule), for a policy with a goroutine.
//
// A resign (request with kind reqResign) says why (reason) and how the
// lease is given back (giveBack; nil: released), so that hand-overs need
// nothing of the engine either. The engine reaches the policies through
// Elector.pol only: one pointer, shared by every elector whose Config sets
// no policy, so that an elector without policies costs nothing more, and
// a renewal with no renewalRule makes no call. A new policy is a file of
// its own and a line in newPolicies (elector.go).

// attemptGate is a policy consulted before each attempt.
type attemptGate interface {
	// beforeAttempt says what the next attempt does.
	beforeAttempt(e *Elector) attemptMode
	// afterLook is called, when this gate asked for a look, with what the
	// look found: a *backendkit.HeldError naming another holder, an error
	// matching backendkit.ErrNoLease for a free lease, or a store failure
	// (a record of this candidate's own identity is taken without asking).
	// It reports whether the attempt may acquire now.
	afterLook(e *Elector, err error) bool
}

// attemptMode is what a gate asks of the next attempt, from the least to
// the most restrictive.
type attemptMode uint8

const (
	modeAcquire attemptMode = iota // Acquire
	modeLook                       // read the record (Get) first
	modeSkip                       // no attempt now (errSkipped)
)

// leaderSeer is a policy told of every leader the store names (an attempt
// refused, a look, a hand-over).
type leaderSeer interface {
	sawLeader(e *Elector, l Lease)
}

// refusalRule is a policy told when an attempt of the campaign found the
// lease held by holder.
type refusalRule interface {
	refused(e *Elector, holder Lease)
}

// renewalRule is a policy consulted after each successful renewal of t: a
// request (kind reqResign) makes the leader resign at once.
type renewalRule interface {
	renewed(e *Elector, t *leaderTerm) (request, bool)
}

// lifeRule is a policy with work of its own between Start and Stop. start
// runs in Start (with e.mu held); stop in Stop, returning a channel closed
// once that work has ended (nil when there is none) and what it is, for
// Stop's error if it outlives Stop's bound.
type lifeRule interface {
	start(e *Elector)
	stop(e *Elector) (done <-chan struct{}, what string)
}

// policies are an elector's policies by the point they answer at.
type policies struct {
	gates    []attemptGate
	seers    []leaderSeer
	refusals []refusalRule
	renewals []renewalRule
	lives    []lifeRule
}

// newPolicySet files each of list under every point it answers at.
func newPolicySet(list ...any) *policies {
	ps := &policies{}
	for _, p := range list {
		ps.add(p)
	}
	return ps
}

// add files p under every point it answers at.
func (ps *policies) add(p any) {
	if g, ok := p.(attemptGate); ok {
		ps.gates = append(ps.gates, g)
	}
	if s, ok := p.(leaderSeer); ok {
		ps.seers = append(ps.seers, s)
	}
	if r, ok := p.(refusalRule); ok {
		ps.refusals = append(ps.refusals, r)
	}
	if r, ok := p.(renewalRule); ok {
		ps.renewals = append(ps.renewals, r)
	}
	if l, ok := p.(lifeRule); ok {
		ps.lives = append(ps.lives, l)
	}
}

// errSkipped is an attempt a gate skipped (modeSkip): not a store
// failure, and not an error TryAcquire reports.
var errSkipped = errors.New("fxelection: no attempt made")

// gateMode asks the gates about the next attempt: the most restrictive
// answer, and in looked which gates asked for a look (bit i: gates[i]).
// A gate that says skip ends the round: the others are not asked.
func (ps *policies) gateMode(e *Elector) (mode attemptMode, looked uint64) {
	for i, g := range ps.gates {
		switch g.beforeAttempt(e) {
		case modeSkip:
			return modeSkip, 0
		case modeLook:
			mode, looked = modeLook, looked|1<<i
		}
	}
	return mode, looked
}

// lookOver tells the gates that asked for a look (looked) what it found
// (err, not nil) and reports whether all of them let the attempt acquire.
func (ps *policies) lookOver(e *Elector, looked uint64, err error) bool {
	ok := true
	for i, g := range ps.gates {
		if looked&(1<<i) != 0 && !g.afterLook(e, err) {
			ok = false
		}
	}
	return ok
}

// resignRequest is a resign for reason, bounded by ctx, that gives the
// lease back with giveBack (nil: released); sitOut keeps the candidate
// from campaigning for two retry periods after it, as Resign does.
func resignRequest(ctx context.Context, reason StopReason, sitOut bool, giveBack func(context.Context, Lease) error) request {
	return request{kind: reqResign, ctx: ctx, reply: make(chan result, 1), reason: reason, sitOut: sitOut, giveBack: giveBack}
}

// priorityState is an elector's state for the grace rule of priorities
// (priority.go), made when it first sees a candidate of higher priority
// (most electors never do: it costs them nothing). It is declared here,
// with the seam, because every elector follows that rule and keeps the
// pointer to it (Elector.prio): the one policy state the engine carries.
type priorityState struct {
	mu         sync.Mutex
	higherSeen time.Time // last sight of a candidate of higher priority
	freeSince  time.Time // a grace wait: when the lease was first found free
}
