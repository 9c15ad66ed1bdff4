package featuretest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// moves counts the changes of leader identity in rec's intervals that
// started at or after since.
func moves(rec *electiontesting.Recorder, since time.Time) (n int, order []string) {
	last := ""
	for _, iv := range rec.Intervals() {
		if iv.Start.Before(since) {
			last = iv.Identity
			continue
		}
		if iv.Identity != last {
			if last != "" {
				n++
			}
			order = append(order, iv.Identity)
			last = iv.Identity
		}
	}
	return n, order
}

// preempt: with Preempt on, a candidate of higher priority than the
// leader's takes over once the leader has led MinTenure, in one move, and
// keeps the lease: equal priorities never preempt each other. On a backend
// that cannot transfer in one step (backendkit.Transferer) the other
// candidate may take the lease between the release and the hint, as
// ResignTo documents; the higher priority then preempts it in turn: two
// moves are allowed there.
func (s *env) preempt(t *testing.T) {
	rec := &electiontesting.Recorder{}
	allowed := s.allowedMoves(t)
	tm := s.o.Timing
	tenure := 2 * tm.RetryPeriod
	name := electiontesting.Election(t)
	low := s.candidatesWith(t, name, 2, rec, func(i int, c *fxelection.Config) {
		c.Candidacy.Preempt, c.Candidacy.MinTenure = true, tenure
	})
	first, _ := waitLeader(t, low, nil, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	time.Sleep(2 * tenure) // equal priorities: nothing moves
	if n, order := moves(rec, time.Time{}); n != 0 {
		t.Fatalf("leadership moved %d times between equal priorities: %v", n, order)
	}
	joined := time.Now()
	cfg := low[0].e.Config()
	cfg.Identity, cfg.Candidacy.Priority = "e2e-high", 5
	high := []*candidate{s.startCandidate(t, cfg, rec)}
	limit := time.Duration(allowed) * (tenure + 4*backoff.JitterMax(tm.RetryPeriod))
	electiontesting.WaitFor(t, limit+5*time.Second, "the higher priority to lead", high[0].e.IsLeader)
	took := time.Since(joined)
	if took > limit+2*time.Second {
		t.Errorf("preemption took %v, want within MinTenure + 4 retry periods (%v) and slack", took, limit)
	}
	time.Sleep(2 * tenure)
	if n, order := moves(rec, joined); n < 1 || n > allowed || !high[0].e.IsLeader() {
		t.Fatalf("after the higher priority joined (first leader %s), leadership moved %d times (%v), want 1 (at most %d), to it", first.e.Status().Identity, n, order, allowed)
	}
	t.Logf("preempted by a higher priority in %v (MinTenure %v)", took, tenure)
	rec.Check(t)
}

// priorityGrace: a candidate that has seen one of higher priority does not
// take the lease the moment it is free: the higher one, back within
// PriorityGrace, gets it; once the higher one is gone for good, the lower
// one takes it after the grace.
func (s *env) priorityGrace(t *testing.T) {
	rec := &electiontesting.Recorder{}
	tm := s.o.Timing
	grace := 5 * tm.RetryPeriod
	cs := s.candidatesWith(t, electiontesting.Election(t), 2, rec, func(i int, c *fxelection.Config) {
		c.Candidacy.Priority = 1 - i // e2e-0 has priority 1, e2e-1 has 0
		c.Candidacy.PriorityGrace = grace
	})
	high, low := cs[0], cs[1]
	electiontesting.WaitFor(t, tm.LeaseDuration+2*tm.RetryPeriod+10*time.Second, "the higher priority to lead", func() bool {
		if low.e.IsLeader() { // it started first: let it go
			_ = low.e.Resign(context.Background())
		}
		return high.e.IsLeader()
	})
	electiontesting.WaitFor(t, 4*tm.RetryPeriod+5*time.Second, "the lower priority to see the higher lead", func() bool {
		l, ok := low.e.Leader()
		return ok && l.Holder == high.e.Status().Identity
	})
	since := time.Now()
	// Resign frees the lease and sits out two retry periods: less than
	// the grace, so the higher one takes it back.
	if err := high.e.Resign(context.Background()); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	electiontesting.WaitFor(t, 2*tm.RetryPeriod+2*backoff.JitterMax(tm.RetryPeriod)+5*time.Second, "the higher priority to lead again", high.e.IsLeader)
	if n, order := moves(rec, since); n != 0 {
		t.Fatalf("the lower priority took the lease within its grace: %v", order)
	}
	// Gone for good: the lower one takes over after the grace, counted
	// from when it finds the lease free (after it has seen it held again).
	time.Sleep(tm.RetryPeriod * 3 / 2)
	stopped := time.Now()
	if err := high.e.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	electiontesting.WaitFor(t, grace+2*backoff.JitterMax(tm.RetryPeriod)+5*time.Second, "the lower priority to lead", low.e.IsLeader)
	took := time.Since(stopped)
	if took < grace-tm.RetryPeriod/2 {
		t.Errorf("the lower priority led %v after the higher one stopped, before its grace %v", took, grace)
	}
	t.Logf("lower priority led %v after the higher one stopped (grace %v)", took, grace)
	rec.Check(t)
}

// rollingUpgrade: three candidates with fixed identities that keep their
// lease on stop are restarted in turn, each with a priority above all
// others (a new version rolling out): after each restart the restarted
// one leads, and leadership moved to another identity at most once (twice
// on a backend that cannot transfer in one step: see preempt).
func (s *env) rollingUpgrade(t *testing.T) {
	rec := &electiontesting.Recorder{}
	allowed := s.allowedMoves(t)
	tm := s.o.Timing
	tenure := 2 * tm.RetryPeriod
	name := electiontesting.Election(t)
	edit := func(c *fxelection.Config) {
		c.Candidacy.Preempt, c.Candidacy.MinTenure, c.KeepLeaseOnStop = true, tenure, true
	}
	cs := s.candidatesWith(t, name, 3, rec, func(_ int, c *fxelection.Config) { edit(c) })
	waitLeader(t, cs, nil, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	for i := range cs {
		since := time.Now()
		old := cs[i]
		cfg := old.e.Config()
		if err := old.e.Stop(context.Background()); err != nil {
			t.Fatalf("Stop %s: %v", cfg.Identity, err)
		}
		cfg.Candidacy.Priority = i + 1
		edit(&cfg)
		cs[i] = s.startCandidate(t, cfg, rec)
		limit := time.Duration(allowed)*(tenure+4*backoff.JitterMax(tm.RetryPeriod)) + 5*time.Second
		if next, _ := waitLeader(t, cs, nil, limit); next != cs[i] {
			// Not yet: the preemption may be on its way.
			electiontesting.WaitFor(t, limit, fmt.Sprintf("restarted %s to lead", cfg.Identity), cs[i].e.IsLeader)
		}
		time.Sleep(tenure)
		if n, order := moves(rec, since); n > allowed {
			t.Fatalf("restart %d (%s, priority %d): leadership moved %d times: %v, want at most %d", i, cfg.Identity, cfg.Candidacy.Priority, n, order, allowed)
		}
	}
	rec.Check(t)
}

// startCandidate starts one candidate for cfg on a backend of its own,
// recorded by rec, stopped at the test's end.
func (s *env) startCandidate(t *testing.T, cfg fxelection.Config, rec *electiontesting.Recorder) *candidate {
	t.Helper()
	inner := s.newBackend(t)
	f := faultinject.New(inner)
	e, err := fxelection.New(cfg, f)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.AddObserver(rec)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return &candidate{e: e, faulty: f, inner: inner}
}

// allowedMoves is how many times leadership may move for one preemption:
// once where the backend transfers in one step, twice where a candidate
// woken by the release may take the lease before the hint is written.
func (s *env) allowedMoves(t *testing.T) int {
	if _, ok := s.newBackend(t).(backendkit.Transferer); ok {
		return 1
	}
	return 2
}
