package metrics_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/metrics"
)

// TestHandOverCounted: a leader that hands the lease to a follower with
// ResignTo counts one hand-over with outcome handed; the follower, which
// handed nothing over, has its four outcomes at zero; both disappear when
// the electors stop.
func TestHandOverCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		mem := memory.New()
		a := newElector(t, "jobs", "a", mem)
		b := newElector(t, "jobs", "b", mem)
		defer m.Attach(a)()
		defer m.Attach(b)()
		start(t, a)
		synctest.Wait()
		start(t, b)
		synctest.Wait()
		if !a.IsLeader() {
			t.Fatal("a should lead")
		}

		// Before any hand-over every outcome is there, at zero.
		for k, v := range series(t, reg, metrics.NameHandOvers) {
			if v != 0 {
				t.Errorf("%s{%s} = %v before any hand-over", metrics.NameHandOvers, k, v)
			}
		}
		if n := len(series(t, reg, metrics.NameHandOvers)); n != 8 {
			t.Errorf("%d hand-over series, want 4 outcomes × 2 electors", n)
		}

		if err := a.ResignTo(context.Background(), "b"); err != nil {
			t.Fatalf("ResignTo: %v", err)
		}
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b should lead after the hand-over")
		}

		const want = `
# HELP fxelection_handovers_total Hand-overs of the lease by this candidate (ResignTo, preemption), by outcome (handed, overtaken, lost, error).
# TYPE fxelection_handovers_total counter
fxelection_handovers_total{election="jobs",identity="a",outcome="error"} 0
fxelection_handovers_total{election="jobs",identity="a",outcome="handed"} 1
fxelection_handovers_total{election="jobs",identity="a",outcome="lost"} 0
fxelection_handovers_total{election="jobs",identity="a",outcome="overtaken"} 0
fxelection_handovers_total{election="jobs",identity="b",outcome="error"} 0
fxelection_handovers_total{election="jobs",identity="b",outcome="handed"} 0
fxelection_handovers_total{election="jobs",identity="b",outcome="lost"} 0
fxelection_handovers_total{election="jobs",identity="b",outcome="overtaken"} 0
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.NameHandOvers); err != nil {
			t.Errorf("after a.ResignTo(b):\n%v", err)
		}
		if got := series(t, reg, metrics.NameTransitions)["direction=lost,election=jobs,identity=a"]; got != 1 {
			t.Errorf("a's lost transitions = %v, want 1", got)
		}
		if got := series(t, reg, metrics.NameLeaderInfo)["election=jobs,identity=a,leader=b"]; got != 1 {
			t.Errorf("a's leader_info after the hand-over: %v", series(t, reg, metrics.NameLeaderInfo))
		}
		lintClean(t, reg)

		stop(t, a)
		stop(t, b)
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series left after both stopped", n)
		}
	})
}

// TestPreemptionRequestsCounted: a follower of higher priority with
// Preempt asks the leader for the lease; each request is a backend
// operation "preempt" in the operation histogram (its count is the
// requests made), and the leader hands over (outcome handed) once it has
// led MinTenure.
func TestPreemptionRequestsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		mem := memory.New()
		low := testConfig("jobs", "a")
		low.Candidacy.Preempt, low.Candidacy.MinTenure = true, 2*retryPeriod // a leader that accepts preemption
		a, err := fxelection.New(low, mem)
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig("jobs", "b")
		cfg.Candidacy.Priority, cfg.Candidacy.Preempt, cfg.Candidacy.MinTenure = 1, true, 2*retryPeriod
		b, err := fxelection.New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Attach(a)()
		defer m.Attach(b)()
		start(t, a)
		synctest.Wait()
		start(t, b)
		defer stop(t, b)
		defer stop(t, a)
		for deadline := time.Now().Add(time.Minute); !b.IsLeader(); {
			if time.Now().After(deadline) {
				t.Fatal("b (priority 1, Preempt) did not take the lease from a (priority 0)")
			}
			time.Sleep(retryPeriod)
		}
		requests := 0.0
		for k, v := range series(t, reg, metrics.NameOperationDuration) {
			if strings.Contains(k, "identity=b") && strings.Contains(k, "operation=preempt") {
				requests += v
			}
		}
		if requests < 1 {
			t.Errorf("no operation=preempt in %s for b: %v", metrics.NameOperationDuration, series(t, reg, metrics.NameOperationDuration))
		}
		handed := series(t, reg, metrics.NameHandOvers)
		if v := handed["election=jobs,identity=a,outcome=handed"]; v != 1 {
			t.Errorf("a's handed hand-overs = %v, want 1 (%v)", v, handed)
		}
	})
}
