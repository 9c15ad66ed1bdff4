package fxelection

// The engine's state: the Elector, the loop's events and requests, and
// what the loop keeps while leading. The leadership itself is in term.go,
// the mailbox in mailbox.go, the Group in group.go, the policies'
// interfaces in policy.go (layers_test.go has the concerns in order).

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Elector campaigns for one election's lease on a Backend and keeps it while
// it can. It owns all timing: the leader renews every RetryPeriod and stops
// believing it leads once no renewal has succeeded within RenewDeadline of
// the start of the last successful one (measured on the local monotonic
// clock), which is before its lease can expire in the store. Followers retry
// every RetryPeriod (jittered), back off exponentially on store failures,
// and wake at once when the backend pushes a release.
//
// Panics in Observers and Callbacks are recovered (see PanicError), and
// backend errors are redacted (backendkit.RedactError) before anything else sees them.
//
// What it cannot promise: a process paused longer than LeaseDuration−
// RenewDeadline at the wrong moment, or a clock running that much faster,
// can act as leader after another took over. Use the fencing term
// (LeaseFromContext) to make such late writes harmless.
//
// One process can run many elections: a leader waiting for its next
// renewal holds no goroutine, electors that share a backend implementing
// backendkit.BatchRenewer renew in batches (one store round trip for many leases), and
// electors started together share a few goroutines for their first step
// instead of one each.
//
// An Elector is safe for concurrent use by many goroutines. Start it once;
// after Stop it cannot be started again. Callbacks never run on the
// goroutine that renews, so a slow callback cannot delay a renewal;
// observers are called synchronously and must be fast (see Observer).
type Elector struct {
	// Implementation notes. A leader's leadership runs on timer and request
	// events (leadStep), not on a goroutine of its own; campaigns started
	// together take their first step on a few goroutines shared per backend
	// (startCampaign). The fields are ordered to leave little padding: a
	// process running many elections keeps one Elector per election.

	cfg     Config
	backend Backend
	kind    string
	log     *slog.Logger

	// base carries the values of Start's context, without its
	// cancellation: every context of the elector derives from it.
	base context.Context
	// disp delivers callbacks; created on first use after Start (see
	// callbacks), so an elector whose callbacks never run has none.
	disp atomic.Pointer[dispatcher]
	// batch sends renewals in batches with other electors on the same
	// backend when it implements backendkit.BatchRenewer (nil otherwise); set by
	// Start.
	batch  *batcher
	work   tracker
	obs    atomic.Pointer[[]*observerEntry]
	lifeMu sync.Mutex // serialises Start and Stop

	// inflight is the backend operation the campaign loop is in (nil when
	// none), so that Stop can say what it gave up waiting for and Status
	// can show a wedged loop.
	inflight atomic.Pointer[inflightOp]
	// canDispatch is set by Start: callbacks are delivered from then on.
	canDispatch atomic.Bool
	// detached is set once Stop has sent EventDetached: observers get
	// nothing after it, even from a loop Stop had to leave running.
	detached atomic.Bool
	// subscribed is set once backendkit.Notifier.Subscribe has returned.
	subscribed atomic.Bool
	// halted is set by Stop (with mu held) before anything else it does:
	// the campaign loop ends, its backend call in flight is cancelled
	// (opCancel) unless it is a renewal, which is let finish (see
	// keeper.Cut), and the leader context is cancelled.
	halted atomic.Bool
	// startState says where the campaign's first step is (guarded by
	// group.mu): see startCampaign.
	startState uint8
	// losses counts the leaderships in a row that ended by the renew
	// deadline with no successful renewal since (capped at
	// maxLosses): afterLead waits longer with each. Only the loop touches it.
	losses uint8
	// group is the Group the elector was made in; nil for one on its own.
	group *Group

	// The loop's mailbox (mailbox.go), and the leadership the loop runs
	// (only the loop touches it).
	mailbox
	ls leadState

	// Guarded by mu, like the fields after it.
	started     bool
	stopped     bool
	leaderKnown bool
	listening   bool // the backend is a backendkit.Notifier: Start subscribes
	mu          sync.Mutex
	opCancel    context.CancelFunc // cancels the loop's backend call in flight (opContext; renewals have none)
	listenDone  chan struct{}      // closed when the push subscription is cancelled; made by Stop
	unsub       func()             // the push subscription's cancel, for Stop
	term        *leaderTerm
	finalLease  *Lease // lease to release on Stop, set by the loop on exit
	leader      Lease
	lastContact time.Time
	lastFail    *failure // the last store failure, nil before the first
	// incarnation is sent with every Acquire (backendkit.AcquireRequest.Incarnation):
	// random per New and replaced when a leadership this elector announced
	// ends (stepDown), so every announced leadership has a term of its own
	// while a retry after a lost response keeps the term it won.
	incarnation string
	// reqMeta is the metadata sent with every Acquire: Config.Metadata,
	// plus handover.MetaPriority when Config.Candidacy.Priority is not 0.
	reqMeta map[string]string
	// pol are the elector's policies (policy.go): never nil, shared by
	// every elector whose Config sets none.
	pol *policies
	// prio is the priority rules' state (priority.go), made when the
	// elector first sees a candidate of higher priority: every candidate
	// follows the grace rule, and most never need it.
	prio atomic.Pointer[priorityState]
}

// failure is a store failure and when it happened (Status.LastError).
type failure struct {
	err error
	at  time.Time
}

type observerEntry struct{ o Observer }

// discardLogger is the logger of electors without Config.Logger, shared.
var discardLogger = slog.New(slog.DiscardHandler)

// inflightOp is one backend call of the campaign loop.
type inflightOp struct {
	op    string
	since time.Time
}

// loopEvent is a set of events signalled to the loop.
type loopEvent uint8

const (
	evRenew    loopEvent = 1 << iota // the renewal timer fired
	evDeadline                       // the renew deadline passed
	evStop                           // Stop began (halted)
)

// leadState is what the loop keeps while leading, between the events that
// run it.
type leadState struct {
	t        *leaderTerm
	failures int
	due      time.Time // when the next renewal is due
	sitOut   bool      // the leadership ended by a resign asking for it (request.sitOut)
}

type requestKind uint8

const (
	reqTryAcquire requestKind = iota
	reqResign
)

// request is a TryAcquire or a resign for the loop. A resign says why
// (reason; ReasonResigned when empty), how the lease is given back
// (giveBack; nil: released) and whether the candidate then sits out two
// retry periods before it campaigns again (sitOut).
type request struct {
	kind     requestKind
	sitOut   bool
	reason   StopReason
	ctx      context.Context
	reply    chan result
	giveBack func(ctx context.Context, l Lease) error
}

type result struct {
	leading bool
	err     error
}
