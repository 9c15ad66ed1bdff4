// Package schedule runs scheduled jobs only on an election's leader. It
// needs no scheduler library: Elector.IsLeader has the shape of gocron v2's
// Elector interface (IsLeader(context.Context) error), and Task wraps a job
// body so it runs inside the elector's RunIfLeader. Package fxgocron, below
// this one, wires both into a gocron v2 scheduler with fx.
//
// Use both. The Elector adapter alone leaves gaps, because a scheduler asks
// only before a run: a run in flight continues after leadership ends (after
// a cut, a job longer than LeaseDuration−RenewDeadline overlaps the new
// leader's first run), stopping the elector before the scheduler lets the
// last run overlap the next leader's, and the job's context is not tied to
// leadership. Task closes them: the job's context is cancelled the moment
// this candidate stops leading (renew deadline, lost lease, Resign, Stop)
// and carries the lease, so fenced writes (package fence) are one call, and
// Stop waits for the job to return before releasing the lease. A job that
// returns promptly once its context is cancelled therefore never runs on two
// candidates at once; a job that ignores its context still can, and only a
// fencing guard on its writes makes that harmless.
//
// What no elector adapter can promise: ticks that fall during a failover
// (up to about LeaseDuration after a leader vanishes, milliseconds after a
// graceful hand-over) run nowhere; schedulers skip them, they do not catch
// up. Schedules on different candidates are not synchronised: the new
// leader runs on its own scheduler's ticks.
package schedule

import (
	"context"
	"errors"
	"fmt"

	"github.com/fxelection/fxelection/fxelection"
)

// ErrNotLeader means this candidate does not lead the election. Errors
// matching it are *NotLeaderError values.
var ErrNotLeader = errors.New("schedule: not the leader")

// NotLeaderError is returned by Elector.IsLeader when this candidate does
// not lead. errors.Is(err, ErrNotLeader) is true for it.
type NotLeaderError struct {
	// Election is the election's name.
	Election string
	// Identity is this candidate's identity.
	Identity string
	// Leader is the current leader as this candidate last saw it, when
	// LeaderKnown; its Holder and Term name it.
	Leader      fxelection.Lease
	LeaderKnown bool
}

// Error implements error.
func (e *NotLeaderError) Error() string {
	if !e.LeaderKnown {
		return fmt.Sprintf("schedule: %q does not lead election %q (leader unknown)", e.Identity, e.Election)
	}
	return fmt.Sprintf("schedule: %q does not lead election %q (leader %q, term %d)", e.Identity, e.Election, e.Leader.Holder, e.Leader.Term)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Elector adapts an *fxelection.Elector to schedulers that ask "may I run
// now?" before each run, such as gocron v2 (gocron.WithDistributedElector).
type Elector struct {
	e *fxelection.Elector
}

// NewElector returns the adapter for e. e must be started (by fx or Start)
// for IsLeader to ever return nil.
func NewElector(e *fxelection.Elector) *Elector { return &Elector{e: e} }

// IsLeader returns nil while this candidate leads (as Elector.IsLeader:
// holding the lease, renewed within RenewDeadline), ctx's error once ctx is
// done, and otherwise a *NotLeaderError naming the leader last seen. It
// does no I/O.
func (a *Elector) IsLeader(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.e.IsLeader() {
		return nil
	}
	return notLeader(a.e)
}

func notLeader(e *fxelection.Elector) error {
	st := e.Status()
	return &NotLeaderError{Election: st.Election, Identity: st.Identity, Leader: st.Leader, LeaderKnown: st.LeaderKnown}
}

// Task wraps fn, a job body, so that it runs only while e leads: each call
// runs fn inside e.RunIfLeader, whose context is cancelled the moment
// leadership ends (or the scheduler's context is done) and carries the lease
// for fencing (fence.FromContext, fxelection.LeaseFromContext). e.Stop waits
// for a running fn before releasing the lease. When e does not lead, the
// call does nothing and returns nil: a skipped run is not a failure. The
// returned function has the shape gocron passes its job context to
// (gocron.NewTask(schedule.Task(e, fn))).
func Task(e *fxelection.Elector, fn func(ctx context.Context) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := e.RunIfLeader(ctx, fn)
		return err
	}
}
