package electiontest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/backoff"
)

// Environment variables read by RunChaos; they override ChaosOptions.
const (
	// envChaosDuration sets ChaosOptions.Duration (a Go duration: "20m").
	envChaosDuration = "FXELECTION_CHAOS_DURATION"
	// envChaosSeed sets ChaosOptions.Seed (a decimal uint64).
	envChaosSeed = "FXELECTION_CHAOS_SEED"
	// envChaosMeanGap sets ChaosOptions.MeanGap (a Go duration), to pack
	// more faults into a long run.
	envChaosMeanGap = "FXELECTION_CHAOS_MEAN_GAP"
	// envChaosReport names a file RunChaos writes its ChaosReport to, as
	// JSON.
	envChaosReport = "FXELECTION_CHAOS_REPORT"
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
// it starts.
type NewChaosClient func(addr string) (backend fxelection.Backend, closeClient func(), err error)

// ChaosOptions configures RunChaos. Zero fields take the documented
// defaults.
type ChaosOptions struct {
	// Target is the store's address, "host:port". Every elector's client
	// reaches it through a Proxy of its own. Required.
	Target string

	// NewClient builds one elector's backend on a proxy's address.
	// Required.
	NewClient NewChaosClient

	// Server, if set, lets the schedule kill the server with SIGKILL and
	// restart it.
	Server ChaosServer

	// RestartLosesLeases says a killed and restarted server comes back
	// without its leases (memcached, Redis without persistence, an
	// emulator that loses its last writes). The guarantees table documents
	// that another candidate may then lead while the old leader still
	// believes it leads, until its next renewal fails: overlaps that end
	// within RenewDeadline + Slack of a kill are counted as documented, not
	// as failures.
	RestartLosesLeases bool

	// Candidates is how many electors campaign at once. Default: 5.
	Candidates int

	// Duration is how long faults are injected. Default: 45s. The
	// environment variable FXELECTION_CHAOS_DURATION overrides it.
	Duration time.Duration

	// Seed makes the schedule reproducible (the interleaving with the
	// store and the scheduler still varies). Default: from the clock; the
	// report names it. FXELECTION_CHAOS_SEED overrides it.
	Seed uint64

	// Timing is the electors' timing. Defaults: LeaseDuration 3s,
	// RenewDeadline 2s, RetryPeriod 400ms (a RenewDeadline defaults to 2/3
	// and a RetryPeriod to 2/15 of a LeaseDuration that is set).
	Timing Timing

	// MeanGap is the mean time between two injected faults (uniform in
	// [0, 2×MeanGap]). Faults overlap across candidates. Default:
	// 1.5 × RetryPeriod. FXELECTION_CHAOS_MEAN_GAP overrides it.
	MeanGap time.Duration

	// FailoverBound is how long after a leader crashes another elector
	// must lead, when one could. Default: LeaseDuration + 1.2×RetryPeriod,
	// the bound of a server-authoritative store. Observed-time stores need
	// LeaseDuration + 2.4×RetryPeriod (a follower first sees the record at
	// its next poll, then waits a full lease on its own clock).
	FailoverBound time.Duration

	// ConvergenceBound is how long after the faults stop exactly one
	// elector must lead. Default: LeaseDuration + 2×RetryPeriod.
	ConvergenceBound time.Duration

	// Slack is added to every timing bound for scheduling delays and store
	// round trips on a loaded machine. It never applies to the overlap
	// and term checks, which hold at every instant. Default: 2s or
	// RetryPeriod, whichever is longer.
	Slack time.Duration
}

func (o ChaosOptions) withDefaults() ChaosOptions {
	if o.Candidates == 0 {
		o.Candidates = 5
	}
	if o.Duration == 0 {
		o.Duration = 45 * time.Second
	}
	if o.Timing.LeaseDuration == 0 {
		o.Timing.LeaseDuration = 3 * time.Second
		if o.Timing.RetryPeriod == 0 {
			o.Timing.RetryPeriod = 400 * time.Millisecond
		}
	}
	if o.Timing.RenewDeadline == 0 {
		o.Timing.RenewDeadline = o.Timing.LeaseDuration * 2 / 3
	}
	if o.Timing.RetryPeriod == 0 {
		o.Timing.RetryPeriod = o.Timing.LeaseDuration * 2 / 15
	}
	if o.MeanGap == 0 {
		o.MeanGap = o.Timing.RetryPeriod * 3 / 2
	}
	if o.FailoverBound == 0 {
		o.FailoverBound = o.Timing.LeaseDuration + jitter(o.Timing.RetryPeriod, 1)
	}
	if o.ConvergenceBound == 0 {
		o.ConvergenceBound = o.Timing.LeaseDuration + 2*o.Timing.RetryPeriod
	}
	if o.Slack == 0 {
		o.Slack = max(2*time.Second, o.Timing.RetryPeriod)
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return o
}

// jitter returns n × 1.2 × d (the longest jittered wait).
func jitter(d time.Duration, n int) time.Duration {
	return time.Duration(n) * backoff.JitterMax(d)
}

// ChaosStats summarises a set of durations.
type ChaosStats struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

func statsOf(ds []time.Duration) ChaosStats {
	if len(ds) == 0 {
		return ChaosStats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return ChaosStats{N: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}

func (s ChaosStats) String() string {
	if s.N == 0 {
		return "n=0"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", s.N, r(s.P50), r(s.P99), r(s.Max))
}

// ChaosReport is what RunChaos measured. Durations are on one monotonic
// clock.
type ChaosReport struct {
	Seed       uint64        `json:"seed"`
	Candidates int           `json:"candidates"`
	Duration   time.Duration `json:"duration"` // of the fault schedule, as run
	Timing     Timing        `json:"timing"`

	// Faults counts injected faults by kind; TotalFaults is their sum.
	Faults      map[string]int `json:"faults"`
	TotalFaults int            `json:"total_faults"`
	// Electors is how many electors were started (restarts included).
	Electors int `json:"electors"`
	// Leaderships counts leadership periods, as sampled from Lease()
	// every millisecond; Callbacks counts OnStartedLeading calls.
	Leaderships int `json:"leaderships"`
	Callbacks   int `json:"callbacks"`
	// FirstTerm and LastTerm are the lowest and highest terms seen.
	FirstTerm uint64 `json:"first_term"`
	LastTerm  uint64 `json:"last_term"`

	// Overlaps counts instants where two electors believed they led,
	// outside documented windows (must be 0); DocumentedOverlaps those
	// inside (RestartLosesLeases), MaxDocumentedOverlap the longest.
	Overlaps             int           `json:"overlaps"`
	DocumentedOverlaps   int           `json:"documented_overlaps"`
	MaxDocumentedOverlap time.Duration `json:"max_documented_overlap"`

	// Failover: a leader crashed (connections reset, elector abandoned
	// without release) → another elector leads, where one could (another
	// elector up and unfaulted throughout, the store up); against
	// FailoverBound.
	Failover      ChaosStats    `json:"failover"`
	FailoverBound time.Duration `json:"failover_bound"`
	// FailoverAll is the same for every crash of a leader, including those
	// where no elector could take over at once (the store down, everyone
	// else cut off): not checked against the bound.
	FailoverAll ChaosStats `json:"failover_all"`
	// StepDown: a leader cut off from the store (partition, refused
	// connections, server down, whole-cluster outage) for longer than
	// RenewDeadline → IsLeader false; LeaderContextEnd: → its leader
	// context done. Against RenewDeadline.
	StepDown         ChaosStats `json:"step_down"`
	LeaderContextEnd ChaosStats `json:"leader_context_end"`
	// EarlyTakeoverChecked counts crashed leaders whose successor under
	// another identity was checked against the early-takeover bound;
	// EarlyTakeoverExempt those taken over early after an elector
	// restarted under the crashed leader's identity had stopped, resigned
	// or failed an Acquire first (it may have released the lease it took
	// over, as the same identity may).
	EarlyTakeoverChecked int `json:"early_takeover_checked"`
	EarlyTakeoverExempt  int `json:"early_takeover_exempt"`
	// HandOver: a leader stopped gracefully or resigned → another elector
	// leads.
	HandOver ChaosStats `json:"hand_over"`
	// Convergence: a whole-cluster outage healed or the server came back →
	// exactly one elector leads. FinalConvergence: the faults stopped →
	// exactly one elector leads, against ConvergenceBound.
	Convergence      ChaosStats    `json:"convergence"`
	FinalConvergence time.Duration `json:"final_convergence"`
	ConvergenceBound time.Duration `json:"convergence_bound"`
	Slack            time.Duration `json:"slack"`

	// Fenced writes, made from RunIfLeader on a resource that rejects
	// terms lower than the highest it has seen: Accepted; LiveRejected,
	// writes rejected while the writer's leader context was still live
	// (must be 0 outside documented windows); StaleRejected, late writes
	// (a writer that kept its term past its leadership, as a paused
	// process would) rejected; StaleAccepted, late writes accepted because
	// no newer term had written yet.
	FencedAccepted int `json:"fenced_accepted"`
	LiveRejected   int `json:"live_rejected"`
	StaleRejected  int `json:"stale_rejected"`
	StaleAccepted  int `json:"stale_accepted"`

	// StopErrors counts graceful Stops that returned an error (a release
	// that failed because a fault began meanwhile, for one);
	// StopErrorSamples quotes the first few.
	StopErrors       int      `json:"stop_errors"`
	StopErrorSamples []string `json:"stop_error_samples"`

	// Violations lists every invariant that failed; RunChaos fails the
	// test when it is not empty.
	Violations []string `json:"violations"`
}

// String formats the report for logs and RELIABILITY.md.
func (r *ChaosReport) String() string {
	var b strings.Builder
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	kinds := make([]string, 0, len(r.Faults))
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "seed %d, %d candidates, %v of faults, timing lease %v / renew deadline %v / retry %v, slack %v\n",
		r.Seed, r.Candidates, ms(r.Duration), r.Timing.LeaseDuration, r.Timing.RenewDeadline, r.Timing.RetryPeriod, r.Slack)
	fmt.Fprintf(&b, "faults injected: %d (", r.TotalFaults)
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Faults[k])
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "electors started: %d; leaderships: %d (callbacks %d); terms %d … %d\n", r.Electors, r.Leaderships, r.Callbacks, r.FirstTerm, r.LastTerm)
	fmt.Fprintf(&b, "overlaps: %d outside documented windows, %d documented (longest %v)\n", r.Overlaps, r.DocumentedOverlaps, ms(r.MaxDocumentedOverlap))
	fmt.Fprintf(&b, "failover after a leader crash, another candidate able to take over: %v (bound %v + slack); every leader crash: %v\n", r.Failover, r.FailoverBound, r.FailoverAll)
	fmt.Fprintf(&b, "step-down of a cut-off leader: IsLeader %v; leader context %v (renew deadline %v + slack)\n", r.StepDown, r.LeaderContextEnd, r.Timing.RenewDeadline)
	fmt.Fprintf(&b, "early takeover after a leader crash: %d checked, %d exempt (the same identity restarted and let go first)\n", r.EarlyTakeoverChecked, r.EarlyTakeoverExempt)
	fmt.Fprintf(&b, "hand-over after Stop/Resign: %v\n", r.HandOver)
	fmt.Fprintf(&b, "convergence after outages and server restarts: %v; after the faults stopped: %v (bound %v + slack)\n", r.Convergence, ms(r.FinalConvergence), r.ConvergenceBound)
	fmt.Fprintf(&b, "fenced writes: %d accepted, %d rejected while live, %d late writes rejected, %d late writes accepted\n", r.FencedAccepted, r.LiveRejected, r.StaleRejected, r.StaleAccepted)
	fmt.Fprintf(&b, "graceful stops with an error: %d %q; violations: %d", r.StopErrors, r.StopErrorSamples, len(r.Violations))
	for _, v := range r.Violations {
		b.WriteString("\n  - " + v)
	}
	return b.String()
}

// RunChaos runs Candidates electors for one election on a real store, each
// with its own client (NewClient) behind its own Proxy, and injects faults
// on a seeded random schedule for Duration:
//
//   - partitions of one elector shorter than RenewDeadline, between
//     RenewDeadline and LeaseDuration, and longer than FailoverBound
//     (bytes stall both ways and are delivered on heal);
//   - refused connections (current ones reset) and plain resets;
//   - added latency;
//   - crashes: the proxy resets every connection and stalls the rest, the
//     elector is abandoned (stopped without reaching the store, so nothing
//     is released); it restarts with the same identity or a new one;
//   - graceful Stop (and restart) and Resign;
//   - server kill -9 and restart, when Server is set;
//   - whole-cluster outages (every proxy partitioned at once).
//
// Faults target the current leader more often than not. It records every
// leadership on one monotonic clock from three sources: callbacks
// (OnStartedLeading, its context's end, OnStoppedLeading), observer events,
// and Lease() (which is IsLeader plus the term) sampled every millisecond;
// and it writes a fenced resource from RunIfLeader every RetryPeriod/4.
// It fails t when an invariant does not hold:
//
//   - no two electors believe they lead at the same instant (from the
//     samples, which are exact: each is the elector's own answer), except in
//     windows RestartLosesLeases documents;
//   - the fenced resource never rejects a write made while the writer's
//     leader context was live (a second line of the same check);
//   - a crashed leader's lease is not taken by another identity before
//     LeaseDuration − RenewDeadline after the crash (it may still have been
//     valid in the store: a paused process resuming would still act),
//     unless an elector restarted under the crashed leader's identity
//     stopped, resigned or failed an Acquire first (the same identity
//     takes its lease over at once, by design, and may then release it);
//   - terms never decrease, and a term repeats only for the same identity;
//   - a leader cut off from the store for longer than RenewDeadline stops
//     believing, and its leader context ends, within RenewDeadline + Slack;
//   - when a leader crashes and another elector is up, unfaulted and able
//     to reach the store throughout, one leads within FailoverBound + Slack;
//   - after the faults stop, exactly one elector leads within
//     ConvergenceBound + Slack;
//   - callbacks come in pairs and in order (OnStoppedLeading after its
//     OnStartedLeading returned, same term), observer events likewise;
//   - no panic is reported by any elector.
//
// Goroutine leaks are for the caller's goleak check (every elector is
// stopped and every proxy closed before RunChaos returns). The environment
// variables FXELECTION_CHAOS_DURATION, FXELECTION_CHAOS_SEED and
// FXELECTION_CHAOS_MEAN_GAP override Duration, Seed and MeanGap for long
// runs; FXELECTION_CHAOS_REPORT names a file to
// write the report to as JSON. The report is logged and returned.
//
// What it cannot see: one host and one clock (no clock skew or rate
// drift), no process pauses (GC, VM freezes), no replica failover of the
// store, and the proxy cuts TCP, not the store's disk.
func RunChaos(t *testing.T, opts ChaosOptions) *ChaosReport {
	t.Helper()
	if opts.Target == "" || opts.NewClient == nil {
		t.Fatal("electiontest: RunChaos needs ChaosOptions.Target and NewClient")
	}
	chaosEnv(t, &opts.Duration, &opts.MeanGap, &opts.Seed)
	opts = opts.withDefaults()
	if err := (fxelection.Config{
		Name: "chaos", Identity: "chaos", LeaseDuration: opts.Timing.LeaseDuration,
		RenewDeadline: opts.Timing.RenewDeadline, RetryPeriod: opts.Timing.RetryPeriod,
	}).Validate(); err != nil {
		t.Fatalf("electiontest: RunChaos timing: %v", err)
	}
	c := newChaos(t, opts)
	c.run()
	rep := c.analyse()
	t.Logf("chaos report:\n%s", rep)
	writeChaosReport(t, rep)
	reportViolations(t, rep.Seed, rep.Violations)
	return rep
}
