// Package chaos is the machinery of electiontest.RunChaos: the seeded fault
// schedule, the proxies' faults, the server's kill and restart, the two
// workloads (electors, lock clients), the process pauses of either run as
// child processes (pause*.go) and the checks on what they recorded.
// electiontest.RunChaos documents the options, the faults and the
// invariants; this package is not for use outside the repository.
package chaos

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/internal/backoff"
)

// Environment variables read by Run; they override Options.
const (
	envDuration = "FXELECTION_CHAOS_DURATION"
	envSeed     = "FXELECTION_CHAOS_SEED"
	envMeanGap  = "FXELECTION_CHAOS_MEAN_GAP"
	envReport   = "FXELECTION_CHAOS_REPORT"
)

// Timing is the members' timing.
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Proxy is a fault-injecting TCP proxy in front of the store
// (electiontest.Proxy).
type Proxy interface {
	Addr() string
	Partition()
	Refuse()
	SetLatency(time.Duration)
	Sever() int
	Heal()
	Close() error
}

// Server is the store's server, to kill and restart.
type Server interface {
	Kill() error
	Restart() error
}

// Options configures Run; electiontest.ChaosOptions documents each field.
type Options struct {
	Target             string
	NewProxy           func(target string) (Proxy, error)
	NewClient          func(addr string) (fxelection.Backend, func(), error)
	Server             Server
	RestartLosesLeases bool
	Candidates         int
	// Locks selects the lock workload: Candidates lock clients on Keys
	// keys, holding up to MaxHold. Otherwise Candidates electors.
	Locks   bool
	Keys    int
	MaxHold time.Duration
	// Pauses selects the pause workload: every member a process of its
	// own, frozen with SIGSTOP and resumed with SIGCONT (pause.go). Fence,
	// if set, is the store's fence guard its fenced writes go through;
	// otherwise a resource in the runner that refuses lower terms.
	Pauses           bool
	Fence            func(ctx context.Context, tok fence.Token) error
	Duration         time.Duration
	Seed             uint64
	Timing           Timing
	MeanGap          time.Duration
	FailoverBound    time.Duration
	ConvergenceBound time.Duration
	Slack            time.Duration
}

func (o Options) withDefaults() Options {
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
	if o.Keys == 0 {
		o.Keys = 2
	}
	if o.MaxHold == 0 {
		o.MaxHold = 2 * o.Timing.RetryPeriod
	}
	return o
}

// jitter returns n × 1.2 × d (the longest jittered wait).
func jitter(d time.Duration, n int) time.Duration {
	return time.Duration(n) * backoff.JitterMax(d)
}

// Run runs the workload o selects under the fault schedule, checks the
// invariants, logs and returns the report, and fails t on a violation.
func Run(t *testing.T, o Options) *Report {
	t.Helper()
	if IsChild() {
		if o.NewClient == nil {
			t.Fatal("electiontest: RunChaos needs ChaosOptions.NewClient")
		}
		if err := runChild(o.NewClient); err != nil {
			t.Fatalf("chaos member: %v", err)
		}
		return &Report{}
	}
	if o.Pauses && !pausesSupported {
		t.Skip("electiontest: process pauses need Linux")
	}
	if o.Target == "" || o.NewClient == nil || o.NewProxy == nil {
		t.Fatal("electiontest: RunChaos needs ChaosOptions.Target and NewClient")
	}
	applyEnv(t, &o)
	o = o.withDefaults()
	tm := o.Timing
	var err error
	if o.Locks {
		err = lock.Options{Identity: "lockchaos", Timing: fxelection.Timing{LeaseDuration: tm.LeaseDuration, RenewDeadline: tm.RenewDeadline, RetryPeriod: tm.RetryPeriod}}.Validate()
	} else {
		err = fxelection.Config{Name: "chaos", Identity: "chaos", Timing: fxelection.Timing{LeaseDuration: tm.LeaseDuration, RenewDeadline: tm.RenewDeadline, RetryPeriod: tm.RetryPeriod}}.Validate()
	}
	if err != nil {
		t.Fatalf("electiontest: RunChaos timing: %v", err)
	}
	var rep *Report
	var trace *tracer // the pause workload keeps none
	switch {
	case o.Pauses:
		rep = runPauses(t, o)
	case o.Locks:
		lc := newLockChaos(t, o)
		lc.run()
		rep, trace = lc.analyse(), lc.trace
	default:
		c := newChaos(t, o)
		c.run()
		rep, trace = c.analyse(), c.trace
	}
	if err := trace.finish(t.Logf, len(rep.Violations) > 0); err != nil {
		t.Errorf("write chaos trace: %v", err)
	}
	t.Logf("chaos report:\n%s", rep)
	if path := os.Getenv(envReport); path != "" {
		if data, err := json.MarshalIndent(rep, "", "  "); err == nil {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Errorf("write chaos report: %v", err)
			}
		}
	}
	for i, v := range rep.Violations {
		if i == 20 {
			t.Errorf("… and %d more violations", len(rep.Violations)-i)
			break
		}
		t.Errorf("chaos (seed %d): %s", rep.Seed, v)
	}
	return rep
}

// applyEnv applies FXELECTION_CHAOS_DURATION, FXELECTION_CHAOS_MEAN_GAP and
// FXELECTION_CHAOS_SEED to the options they override.
func applyEnv(t *testing.T, o *Options) {
	t.Helper()
	for name, to := range map[string]*time.Duration{envDuration: &o.Duration, envMeanGap: &o.MeanGap} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				t.Fatalf("electiontest: %s=%q: want a positive duration", name, v)
			}
			*to = d
		}
	}
	if v := os.Getenv(envSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("electiontest: %s=%q: want a decimal uint64", envSeed, v)
		}
		o.Seed = s
	}
}
