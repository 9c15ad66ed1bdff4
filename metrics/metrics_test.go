package metrics_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/metrics"
)

// TestScriptedSequence drives one elector ("a") through gain, renewals, a
// store error, loss and a new leader ("b") on fake time, and compares
// everything a's metrics say with the exact expected exposition.
//
// Timeline (fake time from the bubble's start, timings 1.5s/1s/200ms):
//
//	0      a acquires (term 1); b starts and finds it held
//	0.2    a renews (margin 1.5-0.2 = 1.3s)
//	0.4    a renews (margin 1.3s)
//	0.5    test: a's renewals fail with a store error
//	0.6    a's renewal fails (error); a retries 50–60ms later
//	0.61   test: failure cleared; the lease released behind a's back; b takes it (term 2)
//	~0.65  a's renewal finds the lease gone (lost): a steps down, tries to
//	       acquire, sees b (held), and once more on the release's wake-up (held)
//	0.8    compare
func TestScriptedSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		mem := memory.New()
		faulty := faultinject.New(mem)
		a := newElector(t, "jobs", "a", faulty)
		b := newElector(t, "jobs", "b", mem)
		detach := m.Attach(a)
		defer detach()
		defer stop(t, b)
		defer stop(t, a)
		// What a's events say, for the expected metrics: the first renewal
		// comes at a random point of the first retry period, so how many
		// renewals fall into each window of the script varies.
		rec := &eventLog{}
		a.AddObserver(rec)

		origin := time.Now()
		start(t, a)
		synctest.Wait()
		start(t, b)
		synctest.Wait()

		after(origin, 500*time.Millisecond)
		if got := series(t, reg, metrics.NameLeaderInfo); len(got) != 1 || got["election=jobs,identity=a,leader=a"] != 1 {
			t.Fatalf("leader_info while a leads = %v", got)
		}
		if got := series(t, reg, metrics.NameIsLeader); got["election=jobs,identity=a"] != 1 {
			t.Fatalf("is_leader while a leads = %v", got)
		}
		faulty.Fail(backendkit.OpRenew, faultinject.ErrInjected)

		after(origin, 610*time.Millisecond)
		faulty.Fail(backendkit.OpRenew, nil)
		lease, ok := a.Lease()
		if !ok {
			t.Fatal("a should still lead at 0.61s (renew deadline 1.4s)")
		}
		if err := mem.Release(context.Background(), lease); err != nil {
			t.Fatalf("release behind a's back: %v", err)
		}
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b should lead after the release")
		}

		after(origin, 800*time.Millisecond)
		if a.IsLeader() {
			t.Fatal("a should have stepped down")
		}

		const l = `election="jobs",identity="a"`
		const bl = `backend="memory",election="jobs",identity="a"`
		ops := metrics.OperationBuckets()
		rec.mu.Lock()
		var opHists string
		for _, k := range []string{"acquire/ok", "acquire/held", "renew/ok", "renew/error", "renew/lost"} {
			if n := rec.ops[k]; n > 0 {
				op, res, _ := strings.Cut(k, "/")
				opHists += histogram(metrics.NameOperationDuration, bl+`,operation="`+op+`",result="`+res+`"`, ops, make([]float64, n)...)
			}
		}
		if len(rec.ops) != 5 || rec.ops["renew/ok"] < 2 || rec.ops["renew/lost"] != 1 || rec.ops["acquire/ok"] != 1 {
			t.Fatalf("unexpected script: operations %v", rec.ops)
		}
		margins, minMargin := rec.margins, slices.Min(rec.margins)
		lastOK := rec.lastOK
		renewErrors := rec.ops["renew/error"]
		rec.mu.Unlock()
		for _, m := range margins {
			if m < leaseDuration.Seconds()-retryPeriod.Seconds()-1e-9 || m > leaseDuration.Seconds()-retryPeriod.Seconds()/2 {
				t.Fatalf("margin %v outside [lease − retry, lease − retry/2]", m)
			}
		}
		want := `
# HELP fxelection_is_leader Whether this candidate leads the election (1) or not (0).
# TYPE fxelection_is_leader gauge
fxelection_is_leader{` + l + `} 0
# HELP fxelection_term Fencing term of the leader last observed by this candidate (its own while leading).
# TYPE fxelection_term gauge
fxelection_term{` + l + `} 2
# HELP fxelection_leadership_transitions_total Times this candidate gained or lost leadership, by direction.
# TYPE fxelection_leadership_transitions_total counter
fxelection_leadership_transitions_total{direction="gained",` + l + `} 1
fxelection_leadership_transitions_total{direction="lost",` + l + `} 1
# HELP fxelection_backend_errors_total Backend operations that failed with a store error, by operation.
# TYPE fxelection_backend_errors_total counter
fxelection_backend_errors_total{` + bl + `,operation="acquire"} 0
fxelection_backend_errors_total{` + bl + `,operation="get"} 0
fxelection_backend_errors_total{` + bl + `,operation="release"} 0
fxelection_backend_errors_total{` + bl + `,operation="renew"} ` + strconv.Itoa(renewErrors) + `
# HELP fxelection_backend_operation_duration_seconds Duration of backend operations, by operation and result (ok, held, lost, none, canceled, error).
# TYPE fxelection_backend_operation_duration_seconds histogram
` + opHists + `
# HELP fxelection_last_renew_timestamp_seconds Unix time at which the last successful acquisition or renewal of the lease started.
# TYPE fxelection_last_renew_timestamp_seconds gauge
fxelection_last_renew_timestamp_seconds{` + l + `} ` + unix(lastOK) + `
# HELP fxelection_renew_margin_seconds Lease time left at each successful renewal: lease duration minus the time from the previous successful renewal's (or the acquisition's) start to this renewal's completion.
# TYPE fxelection_renew_margin_seconds histogram
` + histogram(metrics.NameRenewMargin, l, metrics.MarginBuckets(), margins...) + `
# HELP fxelection_renew_margin_min_seconds Smallest renew margin seen since metrics were attached to this elector.
# TYPE fxelection_renew_margin_min_seconds gauge
fxelection_renew_margin_min_seconds{` + l + `} ` + strconv.FormatFloat(minMargin, 'g', -1, 64) + `
# HELP fxelection_healthy Whether this candidate passes its health check (1) or not (0): Status.Healthy, read at each scrape; always 1 without a Config.Health.Check.
# TYPE fxelection_healthy gauge
fxelection_healthy{` + l + `} 1
# HELP fxelection_leader_info Leader of the election as last observed by this candidate: one series with value 1, absent while unknown.
# TYPE fxelection_leader_info gauge
fxelection_leader_info{` + l + `,leader="b"} 1
# HELP fxelection_handovers_total Hand-overs of the lease by this candidate (ResignTo, preemption), by outcome (handed, overtaken, lost, error).
# TYPE fxelection_handovers_total counter
fxelection_handovers_total{` + l + `,outcome="error"} 0
fxelection_handovers_total{` + l + `,outcome="handed"} 0
fxelection_handovers_total{` + l + `,outcome="lost"} 0
fxelection_handovers_total{` + l + `,outcome="overtaken"} 0
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Errorf("metrics after the scripted sequence:\n%v", err)
		}
		lintClean(t, reg)

		// Stopping a deletes every one of its series.
		stop(t, a)
		if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
			t.Errorf("after a stopped: %d series left (err %v)", n, err)
		}
	})
}

// eventLog counts one elector's operations by "op/result" and records its
// renew margins and the start of its last successful acquire or renewal.
type eventLog struct {
	mu      sync.Mutex
	ops     map[string]int
	margins []float64
	lastOK  time.Time
}

func (r *eventLog) Observe(ev fxelection.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case fxelection.EventOperation:
		res := "error"
		switch {
		case ev.Err == nil:
			res = "ok"
			if ev.Op == backendkit.OpAcquire || ev.Op == backendkit.OpRenew {
				r.lastOK = ev.Time.Add(-ev.Duration)
			}
		case errors.Is(ev.Err, backendkit.ErrLeaseHeld):
			res = "held"
		case errors.Is(ev.Err, backendkit.ErrLeaseLost):
			res = "lost"
		}
		if r.ops == nil {
			r.ops = map[string]int{}
		}
		r.ops[ev.Op+"/"+res]++
	case fxelection.EventRenewed:
		r.margins = append(r.margins, ev.Margin.Seconds())
	}
}

func unix(t time.Time) string {
	return strconv.FormatFloat(unixSeconds(t), 'g', -1, 64)
}

func lintClean(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestLeaderInfoFollowsLeader checks that leader_info keeps one series per
// election and drops the old one when the leader changes, and that it is
// gone while the leader is unknown.
func TestLeaderInfoFollowsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		mem := memory.New()
		x := newElector(t, "jobs", "x", mem)
		y := newElector(t, "jobs", "y", mem)
		defer m.Attach(y)()
		start(t, x)
		synctest.Wait()
		start(t, y)
		synctest.Wait()
		defer stop(t, y)

		if got := series(t, reg, metrics.NameLeaderInfo); len(got) != 1 || got["election=jobs,identity=y,leader=x"] != 1 {
			t.Fatalf("y's leader_info with x leading = %v", got)
		}
		// x stops and releases; y takes over at once (push wake-up).
		stop(t, x)
		synctest.Wait()
		if !y.IsLeader() {
			t.Fatal("y should lead after x stopped")
		}
		got := series(t, reg, metrics.NameLeaderInfo)
		if len(got) != 1 || got["election=jobs,identity=y,leader=y"] != 1 {
			t.Fatalf("y's leader_info after takeover = %v (want only leader=y)", got)
		}
		if got := series(t, reg, metrics.NameTerm); got["election=jobs,identity=y"] != 2 {
			t.Errorf("term after takeover = %v, want 2", got)
		}
		// y resigns: it no longer knows the leader, so no series at all.
		if err := y.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := series(t, reg, metrics.NameLeaderInfo); len(got) != 0 {
			t.Errorf("leader_info after y resigned = %v, want none (leader unknown)", got)
		}
		if got := series(t, reg, metrics.NameIsLeader); got["election=jobs,identity=y"] != 0 {
			t.Errorf("is_leader after resign = %v", got)
		}
	})
}

// TestSeparateSeriesPerElection: two electors with different names each
// get their own series, both leading.
func TestSeparateSeriesPerElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		mem := memory.New()
		alpha := newElector(t, "alpha", "p1", mem)
		beta := newElector(t, "beta", "p1", mem)
		defer m.Attach(alpha)()
		defer m.Attach(beta)()
		start(t, alpha)
		start(t, beta)
		synctest.Wait()
		time.Sleep(3 * retryPeriod) // a few renewals each
		synctest.Wait()

		want := map[string]float64{"election=alpha,identity=p1": 1, "election=beta,identity=p1": 1}
		if got := series(t, reg, metrics.NameIsLeader); !equal(got, want) {
			t.Errorf("is_leader = %v, want %v", got, want)
		}
		wantInfo := map[string]float64{"election=alpha,identity=p1,leader=p1": 1, "election=beta,identity=p1,leader=p1": 1}
		if got := series(t, reg, metrics.NameLeaderInfo); !equal(got, wantInfo) {
			t.Errorf("leader_info = %v, want %v", got, wantInfo)
		}
		for _, name := range []string{"alpha", "beta"} {
			got := seriesFor(t, reg, metrics.NameOperationDuration, name)
			if got["backend=memory,election="+name+",identity=p1,operation=renew,result=ok"] != 3 {
				t.Errorf("%s renew count = %v, want 3", name, got)
			}
		}
		lintClean(t, reg)

		stop(t, alpha)
		if got := series(t, reg, metrics.NameIsLeader); !equal(got, map[string]float64{"election=beta,identity=p1": 1}) {
			t.Errorf("is_leader after alpha stopped = %v, want only beta", got)
		}
		stop(t, beta)
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series left after both stopped", n)
		}
	})
}

// TestStopLeavesNoStaleLeader: a leader that stops, or is detached while
// running, leaves no is_leader 1 (nor any other series); events after
// detaching do not bring series back.
func TestStopLeavesNoStaleLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		mem := memory.New()

		// Stop while leading.
		e := newElector(t, "jobs", "a", mem)
		detach := m.Attach(e)
		start(t, e)
		synctest.Wait()
		if got := series(t, reg, metrics.NameIsLeader); got["election=jobs,identity=a"] != 1 {
			t.Fatalf("is_leader = %v", got)
		}
		stop(t, e)
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Fatalf("%d series left after stop", n)
		}
		detach() // after the elector's own detach: a no-op

		// Detach while leading, then let it renew: nothing comes back.
		e2 := newElector(t, "jobs", "b", mem)
		detach2 := m.Attach(e2)
		start(t, e2)
		synctest.Wait()
		if got := series(t, reg, metrics.NameIsLeader); got["election=jobs,identity=b"] != 1 {
			t.Fatalf("is_leader = %v", got)
		}
		detach2()
		detach2() // idempotent
		time.Sleep(3 * retryPeriod)
		synctest.Wait()
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after detach and renewals", n)
		}
		stop(t, e2)
	})
}

// TestAttachRunning: attaching an elector that already leads takes its
// state from Status.
func TestAttachRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		e := newElector(t, "jobs", "a", memory.New())
		start(t, e)
		defer stop(t, e)
		synctest.Wait()
		time.Sleep(retryPeriod / 2)
		renewStart := e.Status().LastRenew

		defer m.Attach(e)()
		for name, want := range map[string]map[string]float64{
			metrics.NameIsLeader:    {"election=jobs,identity=a": 1},
			metrics.NameTerm:        {"election=jobs,identity=a": 1},
			metrics.NameLeaderInfo:  {"election=jobs,identity=a,leader=a": 1},
			metrics.NameTransitions: {"direction=gained,election=jobs,identity=a": 0, "direction=lost,election=jobs,identity=a": 0},
			metrics.NameLastRenew:   {"election=jobs,identity=a": unixSeconds(renewStart)},
		} {
			if got := series(t, reg, name); !equal(got, want) {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
		lintClean(t, reg)
	})
}

// TestSharedRegistry: New twice on one registry shares the collectors; an
// elector attached through both is counted once; a registry holding
// something else under our names makes New fail.
func TestSharedRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m1, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := metrics.New(reg)
		if err != nil {
			t.Fatalf("second New on one registry: %v", err)
		}
		e := newElector(t, "jobs", "a", memory.New())
		d1 := m1.Attach(e)
		d2 := m2.Attach(e)
		start(t, e)
		synctest.Wait()
		time.Sleep(retryPeriod)
		synctest.Wait()
		got := series(t, reg, metrics.NameOperationDuration)
		want := map[string]float64{
			"backend=memory,election=jobs,identity=a,operation=acquire,result=ok": 1,
			"backend=memory,election=jobs,identity=a,operation=renew,result=ok":   1,
		}
		if !equal(got, want) {
			t.Errorf("operations = %v, want %v (each counted once)", got, want)
		}
		d1()
		if got := series(t, reg, metrics.NameIsLeader); got["election=jobs,identity=a"] != 1 {
			t.Errorf("after one of two detaches is_leader = %v, want still 1", got)
		}
		d2()
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after both detached", n)
		}
		stop(t, e)

		// A wrapped registerer still finds our collectors.
		wrapped := prometheus.WrapRegistererWith(nil, reg)
		if _, err := metrics.New(wrapped); err != nil {
			t.Errorf("New on a wrapping registerer of the same registry: %v", err)
		}

		// Someone else's metric under one of our names.
		other := prometheus.NewPedanticRegistry()
		other.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: metrics.NameIsLeader, Help: "not ours"}))
		if _, err := metrics.New(other); err == nil {
			t.Error("New on a registry with a foreign fxelection_is_leader should fail")
		}
		// nil Metrics and nil electors are harmless.
		var none *metrics.Metrics
		none.Attach(e)()
		m1.Attach(nil)()
	})
}

// TestCanceledIsNotAnError: an operation cut short by Stop counts as
// canceled, not as a store error.
func TestCanceledIsNotAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		faulty := faultinject.New(memory.New())
		faulty.Hang(true)
		e := newElector(t, "jobs", "a", faulty)
		var results []string
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventOperation {
				results = append(results, ev.Op)
				if !errors.Is(ev.Err, context.Canceled) {
					t.Errorf("operation error = %v, want context.Canceled", ev.Err)
				}
			}
		}))
		m.Attach(e)
		start(t, e)
		synctest.Wait() // hanging in Acquire
		// Snapshot the registry right after the operation is counted (Stop
		// deletes everything a moment later).
		var snapshot prometheus.GathererFunc
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventOperation {
				mfs, err := reg.Gather()
				snapshot = func() ([]*dto.MetricFamily, error) { return mfs, err }
			}
		}))
		stop(t, e)
		if len(results) != 1 || snapshot == nil {
			t.Fatalf("operations = %v", results)
		}
		seen := series(t, snapshot, metrics.NameOperationDuration)
		want := map[string]float64{"backend=memory,election=jobs,identity=a,operation=acquire,result=canceled": 1}
		if !equal(seen, want) {
			t.Errorf("operations at stop = %v, want %v", seen, want)
		}
	})
}

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestConcurrentAttachDetach races Attach and detach of one elector against
// its events (run with -race); at the end no series is left.
func TestConcurrentAttachDetach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		e := newElector(t, "jobs", "a", memory.New())
		start(t, e)
		done := make(chan struct{})
		for range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for range 50 {
					d := m.Attach(e)
					time.Sleep(retryPeriod / 3)
					d()
				}
			}()
		}
		for range 4 {
			<-done
		}
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after every detach", n)
		}
		m.Attach(e)
		stop(t, e)
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after stop", n)
		}
	})
}
