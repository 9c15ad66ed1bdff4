// Package handover names what leadership hand-overs write and report:
// Elector.ResignTo's hint records and the preemption of a leader by a
// candidate of higher priority (fxelection.Config's Priority and Preempt),
// for observers, metrics, tests and tools that read lease records.
// Applications that use neither need nothing from it.
package handover

import "errors"

// MetaFrom is the metadata key of a hand-over hint record: its value is
// the identity of the leader that wrote it. The hint's holder is the
// successor.
const MetaFrom = "fxelection.handover-from"

// MetaPriority is the metadata key under which a candidate with a
// priority other than 0 advertises it in its lease record (and in its
// preemption request record), as a decimal integer. A value that is not
// one counts as 0.
const MetaPriority = "fxelection.priority"

// Operation names (fxelection.Event.Op, fxelection.OpError.Op) of
// hand-overs, beside backendkit.OpAcquire and the others.
const (
	// OpHandOver is ResignTo's write of the hint record (after a release,
	// or in one step with it on a backendkit.Transferer).
	OpHandOver = "handover"
	// OpPreempt is a follower's request for a hand-over (Candidacy.Preempt):
	// its write of the election's preemption request record.
	OpPreempt = "preempt"
)

// Event is the fxelection.EventKind of a hand-over's outcome (ResignTo's,
// or a preempted leader's). Lease is the hint record written (its Holder
// the successor), or the successor's lease if it had taken the lease
// already; Duration is the time from the start of the hand-over; Err is
// nil, an error matching backendkit.ErrLeaseHeld when another candidate
// took the lease first (its holder in the *HeldError), one matching
// backendkit.ErrLeaseLost when the lease was no longer the leader's
// (nothing was written), or a store failure. An untyped constant, so that
// it compares with fxelection.Event.Kind (this package is below
// fxelection and cannot name its types).
const Event = 8

// ReasonPreempted is the fxelection.StopReason of a leadership handed to a
// candidate of higher priority that asked for it (Config.Candidacy.Preempt);
// untyped, like Event.
const ReasonPreempted = "preempted"

// ErrBadSuccessor is what Elector.ResignTo returns for a successor that is
// the candidate itself or not a valid identity.
var ErrBadSuccessor = errors.New("fxelection: ResignTo: bad successor")
