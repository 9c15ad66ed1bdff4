package electiontest

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The parts of the chaos schedule that RunChaos (electors) and
// RunLockChaos (locks) share: the environment overrides and the JSON
// report, the weighted draw of a fault kind, the spans of proxy faults, the
// queue of due actions, and the server's kill, restart and the window a
// store that loses its leases on a restart documents.

// chaosEnv applies FXELECTION_CHAOS_DURATION, FXELECTION_CHAOS_MEAN_GAP and
// FXELECTION_CHAOS_SEED to the options they override.
func chaosEnv(t *testing.T, duration, meanGap *time.Duration, seed *uint64) {
	t.Helper()
	if v := os.Getenv(envChaosDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("electiontest: %s=%q: want a positive duration", envChaosDuration, v)
		}
		*duration = d
	}
	if v := os.Getenv(envChaosMeanGap); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("electiontest: %s=%q: want a positive duration", envChaosMeanGap, v)
		}
		*meanGap = d
	}
	if v := os.Getenv(envChaosSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("electiontest: %s=%q: want a decimal uint64", envChaosSeed, v)
		}
		*seed = s
	}
}

// writeChaosReport writes rep as JSON to the file FXELECTION_CHAOS_REPORT
// names, if set.
func writeChaosReport(t *testing.T, rep any) {
	t.Helper()
	if path := os.Getenv(envChaosReport); path != "" {
		if data, err := json.MarshalIndent(rep, "", "  "); err == nil {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Errorf("write chaos report: %v", err)
			}
		}
	}
}

// reportViolations fails t with the first 20 violations.
func reportViolations(t *testing.T, seed uint64, violations []string) {
	t.Helper()
	for i, v := range violations {
		if i == 20 {
			t.Errorf("… and %d more violations", len(violations)-i)
			break
		}
		t.Errorf("chaos (seed %d): %s", seed, v)
	}
}

// faultWeight is how often a fault kind is drawn, relative to the others.
type faultWeight struct {
	kind   string
	weight int
}

// drawFault draws a fault kind from weights.
func drawFault(rng *rand.Rand, weights []faultWeight) string {
	total := 0
	for _, w := range weights {
		total += w.weight
	}
	n := rng.IntN(total)
	for _, w := range weights {
		if n < w.weight {
			return w.kind
		}
		n -= w.weight
	}
	return ""
}

// startProxyFault starts a proxy fault of kind on p: a partition, added
// latency, or refused connections (the current ones reset).
func startProxyFault(p *Proxy, kind string, latency time.Duration) {
	switch kind {
	case faultPartitionShort, faultPartitionMid, faultPartitionLong:
		p.Partition()
	case faultLatency:
		p.SetLatency(latency)
	case faultRefuse:
		p.Refuse()
		p.Sever()
	}
}

// faultSched is a chaos run's clock, seeded random source, queue of due
// actions and the state of its server. Only the scheduler goroutine uses
// it.
type faultSched struct {
	rng         *rand.Rand
	t0          time.Time
	pending     []action
	server      ChaosServer
	serverDown  bool
	serverCh    chan error
	restarting  bool
	downWindows []window // server killed → back
	aborted     bool
	async       *sync.WaitGroup // the run's background work (server restarts)
}

func newFaultSched(seed uint64, server ChaosServer, async *sync.WaitGroup) faultSched {
	return faultSched{
		rng:      rand.New(rand.NewPCG(seed, 0xc4a05)),
		server:   server,
		serverCh: make(chan error, 1),
		async:    async,
	}
}

func (s *faultSched) now() time.Duration { return time.Since(s.t0) }

// between returns a uniform duration in [lo, hi).
func (s *faultSched) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// proxyFaultSpan draws how long a proxy fault of kind lasts and, for
// latency, how much it adds: partitions shorter than RenewDeadline,
// between RenewDeadline and LeaseDuration, and longer than failoverBound +
// slack; latency of 10–100 % of RetryPeriod for 1–4 retry periods; refused
// connections for ⅓…1½ leases.
func (s *faultSched) proxyFaultSpan(kind string, tm Timing, failoverBound, slack time.Duration) (latency, d time.Duration) {
	switch kind {
	case faultPartitionShort:
		d = s.between(tm.RenewDeadline/5, tm.RenewDeadline*4/5)
	case faultPartitionMid:
		d = s.between(tm.RenewDeadline, tm.LeaseDuration)
	case faultPartitionLong:
		d = s.between(failoverBound+slack, failoverBound+slack+tm.LeaseDuration)
	case faultLatency:
		latency = s.between(tm.RetryPeriod/10, tm.RetryPeriod)
		d = s.between(tm.RetryPeriod, 4*tm.RetryPeriod)
	case faultRefuse:
		d = s.between(tm.LeaseDuration/3, tm.LeaseDuration*3/2)
	}
	return latency, d
}

// outageSpan draws how long a whole-cluster outage lasts.
func (s *faultSched) outageSpan(tm Timing, failoverBound time.Duration) time.Duration {
	return s.between(tm.RenewDeadline, failoverBound+tm.LeaseDuration)
}

// schedule runs do at the given offset from t0 on the scheduler goroutine.
func (s *faultSched) schedule(at time.Duration, do func()) {
	s.pending = append(s.pending, action{at: at, do: do})
}

// runFaults calls inject every 0 to 2 × meanGap for duration, running the
// due actions in between and handing a server restart's result to back.
// It returns how long it ran.
func (s *faultSched) runFaults(duration, meanGap time.Duration, inject func(), back func(error)) time.Duration {
	end := s.now() + duration
	next := s.now() + s.between(0, 2*meanGap)
	for !s.aborted && s.now() < end {
		s.step(next, end, back)
		if s.now() >= next && s.now() < end {
			inject()
			next = s.now() + s.between(0, 2*meanGap)
		}
	}
	return s.now()
}

// step sleeps until the next fault, the next due action or a server
// restart result, and runs what is due.
func (s *faultSched) step(next, end time.Duration, back func(error)) {
	wake := min(next, end)
	for _, a := range s.pending {
		wake = min(wake, a.at)
	}
	if d := wake - s.now(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case err := <-s.serverCh:
			back(err)
		}
		t.Stop()
	}
	select {
	case err := <-s.serverCh:
		back(err)
	default:
	}
	now := s.now()
	due := s.pending[:0:0]
	keep := s.pending[:0]
	for _, a := range s.pending {
		if a.at <= now {
			due = append(due, a)
		} else {
			keep = append(keep, a)
		}
	}
	s.pending = keep
	for _, a := range due {
		a.do()
	}
}

// killServer kills the server with SIGKILL and schedules its restart
// after ¼…1½ leases.
func (s *faultSched) killServer(now time.Duration, tm Timing) error {
	if err := s.server.Kill(); err != nil {
		return err
	}
	s.serverDown = true
	s.downWindows = append(s.downWindows, window{start: now, end: -1})
	s.schedule(now+s.between(tm.LeaseDuration/4, tm.LeaseDuration*3/2), s.restartServer)
	return nil
}

// restartServer restarts the server in the background (retried once); the
// result arrives on serverCh.
func (s *faultSched) restartServer() {
	if s.restarting {
		return
	}
	s.restarting = true
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		err := s.server.Restart()
		if err != nil {
			time.Sleep(time.Second)
			err = s.server.Restart()
		}
		s.serverCh <- err
	}()
}

// serverUp records that the server is back and returns when.
func (s *faultSched) serverUp() time.Duration {
	now := s.now()
	s.serverDown, s.restarting = false, false
	s.downWindows[len(s.downWindows)-1].end = now
	return now
}

// errServerRestartHung is bringServerBack's error when a restart does not
// finish.
var errServerRestartHung = errors.New("server restart did not finish within 2 minutes")

// bringServerBack restarts a killed server now and hands the result to
// back.
func (s *faultSched) bringServerBack(back func(error)) error {
	if !s.serverDown {
		return nil
	}
	s.restartServer()
	select {
	case err := <-s.serverCh:
		back(err)
		return nil
	case <-time.After(2 * time.Minute):
		return errServerRestartHung
	}
}

// inRestartWindow reports whether [lo, hi] lies in the window a store that
// loses its leases on a restart documents: from a kill of the server until
// grace (RenewDeadline + slack: the last believer's next renewal fails)
// after it is back.
func inRestartWindow(downWindows []window, grace, lo, hi time.Duration) bool {
	for _, w := range downWindows {
		if w.end >= 0 && lo >= w.start && hi <= w.end+grace {
			return true
		}
	}
	return false
}
