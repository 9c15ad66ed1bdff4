package electiontest

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/chaos"
)

// ChaosServer is the store's server, for RunChaos to kill and restart. The
// servers of internal/testserver implement it.
type ChaosServer interface {
	// Kill kills the server with SIGKILL and waits until it is gone.
	Kill() error
	// Restart starts it again on the same address and data, and waits
	// until it is ready.
	Restart() error
}

// NewChaosClient builds a backend whose client reaches the store at addr
// (a Proxy's address, "127.0.0.1:PORT"), as a separate process would, and
// a function that closes that client. RunChaos calls it for every elector
// or lock client it starts.
type NewChaosClient func(addr string) (backend fxelection.Backend, closeClient func(), err error)

// ChaosOptions configures RunChaos. Zero fields take the documented
// defaults.
type ChaosOptions struct {
	// Target is the store's address, "host:port". Every member's client
	// (an elector's, a lock client's) reaches it through a Proxy of its
	// own. Required.
	Target string

	// NewClient builds one member's backend on a proxy's address.
	// Required.
	NewClient NewChaosClient

	// Server, if set, lets the schedule kill the server with SIGKILL and
	// restart it.
	Server ChaosServer

	// RestartLosesLeases says a killed and restarted server comes back
	// without its leases (memcached, Redis without persistence, an
	// emulator that loses its last writes). The guarantees table documents
	// that another candidate may then lead (or hold a key) while the old
	// one still believes it does, until its next renewal fails: overlaps
	// from a kill until RenewDeadline + Slack after the server is back are
	// counted as documented, not as failures.
	RestartLosesLeases bool

	// Candidates is how many electors campaign at once, or how many lock
	// clients take the locks. Default: 5.
	Candidates int

	// Locks, if set, runs lock clients instead of electors: each its own
	// backend, proxy and lock.Locker, locking Locks.Keys keys with fenced
	// writes to an in-process log per key (see RunChaos).
	Locks *LockWorkload

	// Pauses, if set, runs the pause workload instead of the proxy faults:
	// every member (an elector, or with Locks a lock client) runs in a
	// process of its own, frozen with SIGSTOP and resumed with SIGCONT
	// (see RunChaos). Members reach Target directly: no proxy, no Server
	// kill, so RestartLosesLeases and FailoverBound do not apply. Linux
	// only; elsewhere the test is skipped.
	Pauses *PauseWorkload

	// Duration is how long faults are injected. Default: 45s. The
	// environment variable FXELECTION_CHAOS_DURATION overrides it.
	Duration time.Duration

	// Seed makes the schedule reproducible (the interleaving with the
	// store and the scheduler still varies). Default: from the clock; the
	// report names it. FXELECTION_CHAOS_SEED overrides it.
	Seed uint64

	// Timing is the electors' or Lockers' timing. Defaults: LeaseDuration 3s,
	// RenewDeadline 2s, RetryPeriod 400ms (a RenewDeadline defaults to 2/3
	// and a RetryPeriod to 2/15 of a LeaseDuration that is set).
	Timing Timing

	// MeanGap is the mean time between two injected faults (uniform in
	// [0, 2×MeanGap]). Faults overlap across candidates. Default:
	// 1.5 × RetryPeriod. FXELECTION_CHAOS_MEAN_GAP overrides it.
	MeanGap time.Duration

	// FailoverBound is how long after a leader crashes another elector
	// must lead, when one could; the long partitions last longer than it.
	// Default: LeaseDuration + 1.2×RetryPeriod, the bound of a
	// server-authoritative store. Observed-time stores need
	// LeaseDuration + 2.4×RetryPeriod (a follower first sees the record at
	// its next poll, then waits a full lease on its own clock).
	FailoverBound time.Duration

	// ConvergenceBound is how long after the faults stop exactly one
	// elector must lead, on an acquire or renewal started after they
	// stopped. Default: LeaseDuration + 2×RetryPeriod. Lock
	// clients must instead each take every key within a minute or 20
	// leases (progress, not speed).
	ConvergenceBound time.Duration

	// Slack is added to every timing bound for scheduling delays and store
	// round trips on a loaded machine. It never applies to the overlap
	// and term checks, which hold at every instant. Default: 2s or
	// RetryPeriod, whichever is longer. It never applies to the fencing
	// checks either.
	Slack time.Duration
}

// LockWorkload selects the lock workload of RunChaos and configures it.
// Zero fields take the documented defaults.
type LockWorkload struct {
	// Keys is how many keys every client locks, each from a goroutine of
	// its own (so one client may hold several keys at once). Default: 2.
	Keys int

	// MaxHold bounds how long a client holds a lock before releasing it:
	// while faults are injected, three holds in four last 0 to MaxHold,
	// the others up to 2 × LeaseDuration (long enough to reach the renew
	// deadline under a partition); after, every hold lasts 0 to MaxHold.
	// Default: 2 × RetryPeriod.
	MaxHold time.Duration
}

// PauseWorkload selects the pause workload of RunChaos and configures it.
// Zero fields take the documented defaults.
type PauseWorkload struct {
	// Fence, if set, makes one fenced write to the store through its
	// fence guard (redisfence, pgfence) with tok's election and term, and
	// returns nil if the guard accepted it, an error matching
	// fence.ErrStaleTerm if it refused it. RunChaos calls it from the test
	// process for every write a member reports, one at a time, in the
	// order they arrive; any other error fails the test. Default: a
	// resource in the test process that refuses a term lower than the
	// highest it accepted, as every guard does.
	Fence func(ctx context.Context, tok fence.Token) error
}

// IsChaosChild reports whether this process is a member RunChaos started
// for the pause workload: the test binary run again with the same test
// selected. There RunChaos runs the member (with NewClient on Target, both
// as the test process passed them) and returns an empty report when the
// test process tells it to stop, so a test must not start its server (or
// anything else the test process owns) when IsChaosChild is true: Target
// is ignored.
func IsChaosChild() bool { return chaos.IsChild() }

// ChaosReport is what RunChaos measured: the options, the faults, the
// overlaps, the fenced writes and the violations, and the workload's own
// measures in ElectionChaosReport or LockChaosReport (the other is nil),
// or, for the pause workload, in Pauses (a PauseChaosReport; both nil).
// Durations are on one monotonic clock. String formats it for logs and
// RELIABILITY.md; FXELECTION_CHAOS_REPORT writes it as JSON.
type ChaosReport = chaos.Report

// ElectionChaosReport is what the election workload measured: leaderships
// and terms, failover, step-down, hand-over, convergence and early-takeover
// figures, rejected fenced writes and failed Stops.
type ElectionChaosReport = chaos.ElectionReport

// LockChaosReport is what the lock workload measured: acquisitions per
// key, releases and losses, concurrent keys, Context ends, refused fenced
// writes, failed releases and the time every client took to take every key
// after the faults.
type LockChaosReport = chaos.LockReport

// LockKeyStats is what the lock workload saw of one key.
type LockKeyStats = chaos.KeyStats

// PauseChaosReport is what the pause workload measured: pauses by length,
// pauses of a holder and of a write in flight, overlaps with a paused
// holder, the time a replaced holder took to report its loss after
// SIGCONT, and the fenced writes: late ones refused or accepted before a
// newer term wrote, live ones refused (must be 0).
type PauseChaosReport = chaos.PauseReport

// ChaosStats summarises a set of durations (n, p50, p99, max).
type ChaosStats = chaos.Stats

// RunChaos runs a workload on a real store under faults injected on a
// seeded random schedule for Duration, and fails t when an invariant does
// not hold. The workload is Candidates electors for one election, or, with
// Locks set, Candidates lock clients on Locks.Keys keys; each member has its
// own client (NewClient) behind its own Proxy. The faults:
//
//   - partitions of one member shorter than RenewDeadline, between
//     RenewDeadline and LeaseDuration, and longer than FailoverBound
//     (bytes stall both ways and are delivered on heal);
//   - refused connections (current ones reset) and plain resets;
//   - added latency;
//   - crashes: the proxy resets every connection and stalls the rest, the
//     member is abandoned (stopped without reaching the store, so nothing
//     is released); it restarts within a lease with the same identity or a
//     new one;
//   - graceful Stop (Locker.Close) and restart, and (electors) Resign;
//   - server kill -9 and restart, when Server is set;
//   - whole-cluster outages (every proxy partitioned at once).
//
// Faults target the current leader, or a client holding a lock, six times
// in ten.
//
// Electors: it records every leadership on one monotonic clock from three
// sources: callbacks (OnStartedLeading, its context's end,
// OnStoppedLeading), observer events, and Lease() (which is IsLeader plus
// the term) sampled every millisecond; and it writes a fenced resource from
// RunIfLeader every RetryPeriod/4. It fails t when:
//
//   - two electors believe they lead at the same instant (from the
//     samples, which are exact: each is the elector's own answer), except in
//     windows RestartLosesLeases documents;
//   - the fenced resource rejects a write made while the writer's leader
//     context was live (a second line of the same check);
//   - a crashed leader's lease is taken by another identity before
//     LeaseDuration − RenewDeadline after the crash (it may still have been
//     valid in the store: a paused process resuming would still act),
//     unless an elector restarted under the crashed leader's identity
//     stopped, resigned or failed an Acquire first (the same identity
//     takes its lease over at once, by design, and may then release it);
//   - terms decrease, or a term repeats for another identity;
//   - a leader cut off from the store for longer than RenewDeadline still
//     believes, or its leader context has not ended, RenewDeadline + Slack
//     later;
//   - a leader crashes while another elector is up, unfaulted and able to
//     reach the store throughout, and none leads within FailoverBound +
//     Slack;
//   - after the faults stop, exactly one elector does not lead, on an
//     acquire or renewal started after they stopped, within
//     ConvergenceBound + Slack, or not still 2 × RetryPeriod later;
//   - callbacks do not come in pairs and in order (OnStoppedLeading after
//     its OnStartedLeading returned, same term), or observer events do not;
//   - an elector reports a panic.
//
// Lock clients: every client locks each key from a goroutine of its own, in
// a loop: Acquire with a timeout of 2 × LeaseDuration, hold for a random
// time while writing, under the Lock's Context, to an in-process fenced log
// of the key every RetryPeriod/4 (the token read from the Context with
// fence.FromContext; the log refuses terms lower than the highest it
// accepted), Release, pause up to RetryPeriod/2. A hold is the lock's
// Context lifetime: from Acquire's return to the Context's end (when
// Release began, or when the Locker's Observer reported the loss). It fails
// t when:
//
//   - two holds of one key overlap, outside the window RestartLosesLeases
//     documents (a Lock's Context ends at its renew deadline, before the
//     lease can expire in the store);
//   - the terms of a key, in the order the acquisitions returned, do not
//     strictly increase, or two acquisitions share a term;
//   - the fenced log refused a write made under a live Context, or ever
//     accepted a term lower than one it accepted before;
//   - a Lock's Context does not carry its key and term as the fencing
//     token, a lock's Context never ends, or the Observer's events do not
//     pair with the acquisitions (one end per Lock);
//   - after the faults stopped, some client did not take every key within
//     a minute or 20 leases (progress, not speed), or no two keys were
//     ever held at once (independence).
//
// Pauses (Pauses set): each member is this test binary run again (the
// same test selected; IsChaosChild is true there) and reports, over a
// pipe, what it believes (leads, or holds a key, with the term; electors
// sample Lease() every millisecond) and every fenced write: from
// RunIfLeader, or under a Lock's Context, every RetryPeriod/4, each in
// flight for RetryPeriod/8 (at least 5ms) between its check of the
// leadership and its arrival at the fence (PauseWorkload.Fence), which the
// test process applies in the order the writes arrive. Every 0 to
// 2 × MeanGap one member, the holder six times in ten, is frozen with
// SIGSTOP for less than G = LeaseDuration − RenewDeadline (G/5 … 4G/5),
// about G (±10 %) or far beyond it (2 … 3 leases), now or, three times
// in eleven, as its next fenced write is in flight; then resumed with
// SIGCONT. At most all but one member are frozen at once. It fails t
// when:
//
//   - two members believe they lead (hold a key) at once and the older
//     holder (lower term) was not paused during its leadership (or a lease
//     before it): with it paused, the overlap is counted, as the window
//     fencing is for;
//   - two members believe in one term, or a member believes in a term
//     lower than one believed before without a pause just before;
//   - a paused holder whose lease another member took still believes
//     RenewDeadline + Slack after its SIGCONT;
//   - the fence refuses a live write (one that reached the fence while its
//     writer believed, not frozen in flight, its writer not paused during
//     that leadership and replaced before), refuses a term not lower than the
//     highest it accepted, or accepts one lower (a late write, frozen in
//     flight or made by a replaced paused holder, may be refused; it is
//     counted);
//   - (electors) exactly one does not lead within ConvergenceBound + Slack
//     after the last pause ended; (locks) some key is not taken again
//     within a minute or 20 leases after it (progress, not speed);
//   - a member reports an error or a panic, or does not stop cleanly.
//
// A SIGSTOP freezes a process, not its host: the monotonic clock runs on
// through the pause, as it does through a GC pause or a descheduled
// process; a frozen VM whose clock also stops is not what it injects.
//
// Both write now and then, one write in twenty, again up to two leases
// later whatever happened meanwhile, as a paused process would: the fenced
// resource must refuse it once a newer term wrote.
//
// Goroutine leaks are for the caller's goleak check (every member is
// stopped and every proxy closed before RunChaos returns). The environment
// variables FXELECTION_CHAOS_DURATION, FXELECTION_CHAOS_SEED and
// FXELECTION_CHAOS_MEAN_GAP override Duration, Seed and MeanGap for long
// runs (a seed replays the same schedule of faults for the same options;
// the interleaving with the store and the scheduler still varies);
// FXELECTION_CHAOS_REPORT names a file to write the report to as JSON, and
// FXELECTION_CHAOS_TRACE one to write the run's trace to (every fault and
// heal, every elector event including each backend call and its error,
// every change of the sampled leader count, with its offset from the
// start): what to read when a check fails. Without it a failed run logs
// the trace's last lines. The report is logged and returned.
//
// What it cannot see: one host and one clock (no clock skew or rate
// drift), no replica failover of the store, and the proxy cuts TCP, not
// the store's disk.
func RunChaos(t *testing.T, opts ChaosOptions) *ChaosReport {
	t.Helper()
	o := chaos.Options{
		Target: opts.Target, NewClient: opts.NewClient, RestartLosesLeases: opts.RestartLosesLeases,
		NewProxy:   func(target string) (chaos.Proxy, error) { return NewProxy(target) },
		Candidates: opts.Candidates, Duration: opts.Duration, Seed: opts.Seed,
		Timing:  chaos.Timing(opts.Timing),
		MeanGap: opts.MeanGap, FailoverBound: opts.FailoverBound, ConvergenceBound: opts.ConvergenceBound, Slack: opts.Slack,
	}
	if opts.Server != nil {
		o.Server = opts.Server
	}
	if opts.Locks != nil {
		o.Locks, o.Keys, o.MaxHold = true, opts.Locks.Keys, opts.Locks.MaxHold
	}
	if opts.Pauses != nil {
		o.Pauses, o.Fence = true, opts.Pauses.Fence
	}
	return chaos.Run(t, o)
}
