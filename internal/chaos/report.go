package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Stats summarises a set of durations.
type Stats struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

func statsOf(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Stats{N: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}

func (s Stats) String() string {
	if s.N == 0 {
		return "n=0"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", s.N, r(s.P50), r(s.P99), r(s.Max))
}

// Report is what a chaos run measured. Durations are on one monotonic
// clock. The workload's own measures are in Election or Locks (the other is
// nil); their fields are promoted, and written inline in the JSON.
type Report struct {
	Seed uint64 `json:"seed"`
	// Candidates is how many electors, or lock clients, ran at once.
	Candidates int           `json:"candidates"`
	Duration   time.Duration `json:"duration"` // of the fault schedule, as run
	Timing     Timing        `json:"timing"`
	Slack      time.Duration `json:"slack"`

	// Faults counts injected faults by kind; TotalFaults is their sum.
	Faults      map[string]int `json:"faults"`
	TotalFaults int            `json:"total_faults"`

	// Overlaps counts instants where two electors believed they led, or
	// two holds of one key were live, outside documented windows (must be
	// 0); DocumentedOverlaps those inside (RestartLosesLeases),
	// MaxDocumentedOverlap the longest.
	Overlaps             int           `json:"overlaps"`
	DocumentedOverlaps   int           `json:"documented_overlaps"`
	MaxDocumentedOverlap time.Duration `json:"max_documented_overlap"`

	// FencedAccepted counts the fenced writes accepted (late ones apart);
	// StaleAccepted the late writes (a writer that kept its term past its
	// leadership or hold, as a paused process would) accepted because no
	// newer term had written yet.
	FencedAccepted int `json:"fenced_accepted"`
	StaleAccepted  int `json:"stale_accepted"`

	*ElectionReport
	*LockReport
	// Pauses is what the pause workload measured (Options.Pauses); nil
	// otherwise.
	Pauses *PauseReport `json:"pauses,omitempty"`

	// Violations lists every invariant that failed; the run fails the test
	// when it is not empty.
	Violations []string `json:"violations"`
}

// ElectionReport is what the election workload measured.
type ElectionReport struct {
	// Electors is how many electors were started (restarts included).
	Electors int `json:"electors"`
	// Leaderships counts leadership periods, as sampled from Lease()
	// every millisecond; Callbacks counts OnStartedLeading calls.
	Leaderships int `json:"leaderships"`
	Callbacks   int `json:"callbacks"`
	// FirstTerm and LastTerm are the lowest and highest terms seen.
	FirstTerm uint64 `json:"first_term"`
	LastTerm  uint64 `json:"last_term"`

	// Failover: a leader crashed (connections reset, elector abandoned
	// without release) → another elector leads, where one could (another
	// elector up and unfaulted throughout, the store up); against
	// FailoverBound.
	Failover      Stats         `json:"failover"`
	FailoverBound time.Duration `json:"failover_bound"`
	// FailoverAll is the same for every crash of a leader, including those
	// where no elector could take over at once (the store down, everyone
	// else cut off): not checked against the bound.
	FailoverAll Stats `json:"failover_all"`
	// StepDown: a leader cut off from the store (partition, refused
	// connections, server down, whole-cluster outage) for longer than
	// RenewDeadline → IsLeader false; LeaderContextEnd: → its leader
	// context done. Against RenewDeadline.
	StepDown         Stats `json:"step_down"`
	LeaderContextEnd Stats `json:"leader_context_end"`
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
	HandOver Stats `json:"hand_over"`
	// Convergence: a whole-cluster outage healed or the server came back →
	// exactly one elector leads. FinalConvergence: the faults stopped →
	// exactly one elector leads, against ConvergenceBound.
	Convergence      Stats         `json:"convergence"`
	FinalConvergence time.Duration `json:"final_convergence"`
	ConvergenceBound time.Duration `json:"convergence_bound"`

	// LiveRejected counts fenced writes (from RunIfLeader, on a resource
	// that rejects terms lower than the highest it has seen) rejected while
	// the writer's leader context was still live (must be 0 outside
	// documented windows); StaleRejected the late writes rejected.
	LiveRejected  int `json:"live_rejected"`
	StaleRejected int `json:"stale_rejected"`

	// StopErrors counts graceful Stops that returned an error (a release
	// that failed because a fault began meanwhile, for one);
	// StopErrorSamples quotes the first few.
	StopErrors       int      `json:"stop_errors"`
	StopErrorSamples []string `json:"stop_error_samples"`
}

// KeyStats is what the lock workload saw of one key.
type KeyStats struct {
	Key          string `json:"key"`
	Acquisitions int    `json:"acquisitions"`
	FirstTerm    uint64 `json:"first_term"`
	LastTerm     uint64 `json:"last_term"`
}

// LockReport is what the lock workload measured.
type LockReport struct {
	Keys []KeyStats `json:"keys"`
	// Lockers is how many clients were started (restarts included).
	Lockers int `json:"lockers"`

	// Acquisitions counts the locks taken, every key; Lost those whose
	// Context ended with ErrLost (not by Release), LostAtReturn those
	// whose Context had already ended when Acquire returned. Released
	// counts the holds ended by Release (the client's or Close's).
	Acquisitions int `json:"acquisitions"`
	Released     int `json:"released"`
	Lost         int `json:"lost"`
	LostAtReturn int `json:"lost_at_return"`
	// AcquireTimeouts counts Acquire calls whose context (2 × LeaseDuration)
	// ended first.
	AcquireTimeouts int `json:"acquire_timeouts"`

	// Documented lists the first few documented overlaps with their
	// reason.
	Documented []string `json:"documented"`
	// ConcurrentKeys counts pairs of holds of different keys that were live
	// at the same instant: the keys are independent.
	ConcurrentKeys int `json:"concurrent_keys"`
	// ContextEnd: a holder cut off from the store (partition, refused
	// connections, crash, server down, whole-cluster outage) whose lock
	// was lost → its Context ended (RenewDeadline at most, measured from
	// its last successful renewal, which came before the cut).
	ContextEnd Stats `json:"context_end"`

	// Writes to an in-process fenced log per key that refuses terms lower
	// than the highest it accepted: LiveRefused, refused while the
	// writer's Context was live (must be 0 outside documented windows);
	// StaleRefused, late writes refused.
	LiveRefused  int `json:"live_refused"`
	StaleRefused int `json:"stale_refused"`

	// ReleaseErrors counts Release and Close calls that returned an error
	// (the lease then expires); ReleaseErrorSamples quotes the first few.
	ReleaseErrors       int      `json:"release_errors"`
	ReleaseErrorSamples []string `json:"release_error_samples"`

	// Quiet is how long after the faults stopped (everything healed, the
	// server up, every client running) every client had taken every key.
	Quiet time.Duration `json:"quiet"`
}

// String formats the report for logs and RELIABILITY.md.
func (r *Report) String() string {
	var b strings.Builder
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	who := fmt.Sprintf("%d candidates", r.Candidates)
	if r.LockReport != nil {
		who = fmt.Sprintf("%d clients, %d keys", r.Candidates, len(r.Keys))
	}
	fmt.Fprintf(&b, "seed %d, %s, %v of faults, timing lease %v / renew deadline %v / retry %v, slack %v\n",
		r.Seed, who, ms(r.Duration), r.Timing.LeaseDuration, r.Timing.RenewDeadline, r.Timing.RetryPeriod, r.Slack)
	fmt.Fprintf(&b, "faults injected: %d (%s)\n", r.TotalFaults, countsByKind(r.Faults))
	if e := r.ElectionReport; e != nil {
		fmt.Fprintf(&b, "electors started: %d; leaderships: %d (callbacks %d); terms %d … %d\n", e.Electors, e.Leaderships, e.Callbacks, e.FirstTerm, e.LastTerm)
		fmt.Fprintf(&b, "overlaps: %d outside documented windows, %d documented (longest %v)\n", r.Overlaps, r.DocumentedOverlaps, ms(r.MaxDocumentedOverlap))
		fmt.Fprintf(&b, "failover after a leader crash, another candidate able to take over: %v (bound %v + slack); every leader crash: %v\n", e.Failover, e.FailoverBound, e.FailoverAll)
		fmt.Fprintf(&b, "step-down of a cut-off leader: IsLeader %v; leader context %v (renew deadline %v + slack)\n", e.StepDown, e.LeaderContextEnd, r.Timing.RenewDeadline)
		fmt.Fprintf(&b, "early takeover after a leader crash: %d checked, %d exempt (the same identity restarted and let go first)\n", e.EarlyTakeoverChecked, e.EarlyTakeoverExempt)
		fmt.Fprintf(&b, "hand-over after Stop/Resign: %v\n", e.HandOver)
		fmt.Fprintf(&b, "convergence after outages and server restarts: %v; after the faults stopped: %v (bound %v + slack)\n", e.Convergence, ms(e.FinalConvergence), e.ConvergenceBound)
		fmt.Fprintf(&b, "fenced writes: %d accepted, %d rejected while live, %d late writes rejected, %d late writes accepted\n", r.FencedAccepted, e.LiveRejected, e.StaleRejected, r.StaleAccepted)
		fmt.Fprintf(&b, "graceful stops with an error: %d %q; ", e.StopErrors, e.StopErrorSamples)
	}
	if l := r.LockReport; l != nil {
		fmt.Fprintf(&b, "lockers started: %d; acquisitions: %d (released %d, lost %d, of which %d already lost when Acquire returned); Acquire timeouts: %d\n",
			l.Lockers, l.Acquisitions, l.Released, l.Lost, l.LostAtReturn, l.AcquireTimeouts)
		for _, k := range l.Keys {
			fmt.Fprintf(&b, "key %s: %d acquisitions, terms %d … %d\n", k.Key, k.Acquisitions, k.FirstTerm, k.LastTerm)
		}
		fmt.Fprintf(&b, "overlaps: %d outside documented windows, %d documented (longest %v); holds of different keys at once: %d\n",
			r.Overlaps, r.DocumentedOverlaps, ms(r.MaxDocumentedOverlap), l.ConcurrentKeys)
		for _, d := range l.Documented {
			b.WriteString("  documented: " + d + "\n")
		}
		fmt.Fprintf(&b, "Context end of a lost lock after its holder was cut off: %v (renew deadline %v)\n", l.ContextEnd, r.Timing.RenewDeadline)
		fmt.Fprintf(&b, "fenced writes: %d accepted, %d refused while live, %d late writes refused, %d late writes accepted\n",
			r.FencedAccepted, l.LiveRefused, l.StaleRefused, r.StaleAccepted)
		fmt.Fprintf(&b, "every client took every key %v after the faults stopped\n", ms(l.Quiet))
		fmt.Fprintf(&b, "releases with an error: %d %q; ", l.ReleaseErrors, l.ReleaseErrorSamples)
	}
	if p := r.Pauses; p != nil {
		what := "electors"
		if p.Locks {
			what = fmt.Sprintf("lock clients on %d keys", p.Keys)
		}
		fmt.Fprintf(&b, "members: %d %s, each a process of its own; leaderships (or holds): %d\n", r.Candidates, what, p.Leaderships)
		fmt.Fprintf(&b, "pauses (SIGSTOP … SIGCONT): %d, %d while holding, %d of a fenced write in flight\n", p.Pauses, p.WhileHolding, p.WriteInFlight)
		fmt.Fprintf(&b, "overlaps: %d with a paused holder (longest %v past its SIGCONT), %d without one\n", p.PauseOverlaps, ms(p.LongestAfterResume), r.Overlaps)
		fmt.Fprintf(&b, "pauses of a holder, by length: led on after %s; replaced after %s\n", countsByKind(p.Kept), countsByKind(p.Replaced))
		fmt.Fprintf(&b, "replaced paused holders: loss reported after SIGCONT %v (renew deadline %v + slack)\n", p.LossAfterResume, r.Timing.RenewDeadline)
		fmt.Fprintf(&b, "fenced writes (%s): %d live accepted, %d live refused, %d late refused, %d late accepted before a newer term wrote, %d stale accepted\n",
			p.Guard, r.FencedAccepted, p.LiveRefused, p.StaleRefused, p.LateAccepted, r.StaleAccepted)
		if !p.Locks {
			fmt.Fprintf(&b, "one leader %v after the last pause ended\n", ms(p.Convergence))
		}
	}
	fmt.Fprintf(&b, "violations: %d", len(r.Violations))
	for _, v := range r.Violations {
		b.WriteString("\n  - " + v)
	}
	return b.String()
}

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// countsByKind formats counts by kind, sorted by kind.
func countsByKind(counts map[string]int) string {
	out := make([]string, 0, len(counts))
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
