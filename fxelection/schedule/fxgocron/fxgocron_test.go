package fxgocron_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Elector timing: LeaseDuration−RenewDeadline = 1.5 s of margin for a
// cancelled job to return before another node may lead.
const (
	leaseDur  = 3 * time.Second
	renewDead = 1500 * time.Millisecond
	retry     = 300 * time.Millisecond
	tick      = 100 * time.Millisecond
)

// run is one job run on one node, timed on the test process's one clock.
type run struct {
	node       string
	term       uint64
	start, end time.Time
	leading    bool // the node led when the run started
}

type runLog struct {
	mu   sync.Mutex
	runs []run
}

func (l *runLog) begin(node string, term uint64, leading bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, run{node: node, term: term, start: time.Now(), leading: leading})
	return len(l.runs) - 1
}

func (l *runLog) finish(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[i].end = time.Now()
}

func (l *runLog) all() []run {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.runs)
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// nodesSince returns the nodes that ran the job after t: runs that started
// after t or were still running then.
func (l *runLog) nodesSince(t time.Time) map[string]int {
	n := map[string]int{}
	for _, r := range l.all() {
		if r.start.After(t) || r.end.IsZero() || r.end.After(t) {
			n[r.node]++
		}
	}
	return n
}

// overlaps lists pairs of runs on different nodes whose intervals intersect
// (an unfinished run counts as running until now).
func (l *runLog) overlaps() []string {
	runs := l.all()
	now := time.Now()
	var out []string
	for i, a := range runs {
		aEnd := a.end
		if aEnd.IsZero() {
			aEnd = now
		}
		for _, b := range runs[i+1:] {
			if b.start.After(aEnd) {
				break
			}
			if b.node != a.node {
				out = append(out, fmt.Sprintf("%s (term %d) until %s overlaps %s (term %d) from %s by %v",
					a.node, a.term, aEnd.Format("15:04:05.000"), b.node, b.term, b.start.Format("15:04:05.000"), aEnd.Sub(b.start)))
			}
		}
	}
	return out
}

type node struct {
	id string
	e  *fxelection.Elector
	f  *faultinject.Backend
	s  gocron.Scheduler
}

// startNodes starts n schedulers, each with its own elector on its own
// Redis client, all on one election, running job every tick.
func startNodes(t *testing.T, addr string, n int, job func(nd *node) gocron.Task) []*node {
	t.Helper()
	election := fmt.Sprintf("jobs-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	var nodes []*node
	for i := range n {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		b, err := redislease.New(c, redislease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		nd := &node{id: fmt.Sprintf("n%d", i+1), f: faultinject.New(b)}
		e, err := fxelection.New(fxelection.Config{
			Name: election, Identity: nd.id,
			Timing: fxelection.Timing{
				LeaseDuration: leaseDur,
				RenewDeadline: renewDead,
				RetryPeriod:   retry,
			},
		}, nd.f)
		if err != nil {
			t.Fatal(err)
		}
		nd.e = e
		s, err := fxgocron.New(e)
		if err != nil {
			t.Fatal(err)
		}
		nd.s = s
		if _, err := s.NewJob(gocron.DurationJob(tick), job(nd), gocron.WithSingletonMode(gocron.LimitModeReschedule)); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Start()
		// Scheduler first, then elector (cleanups run last-in first-out).
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		t.Cleanup(func() { _ = s.Shutdown() })
		nodes = append(nodes, nd)
	}
	return nodes
}

// leader waits for one node other than not to lead and returns it and when
// it was seen leading.
func leader(t *testing.T, nodes []*node, not ...*node) (*node, time.Time) {
	t.Helper()
	var l *node
	electiontesting.WaitFor(t, 4*leaseDur+time.Minute, "a new leader", func() bool {
		for _, nd := range nodes {
			if nd.e.IsLeader() && !slices.Contains(not, nd) {
				l = nd
				return true
			}
		}
		return false
	})
	return l, time.Now()
}

// expectOnly checks that after since (plus a settling tick) only want ran
// the job, and that it did run.
func expectOnly(t *testing.T, log *runLog, since time.Time, want *node, step string) {
	t.Helper()
	// Progress, not a time budget: however busy the machine, the leader
	// runs the job at some tick; the window checked is at least the
	// second the caller waited and lasts until that run.
	electiontesting.WaitFor(t, time.Minute, step+": a run on "+want.id, func() bool {
		return log.nodesSince(since.Add(2 * tick))[want.id] > 0
	})
	got := log.nodesSince(since.Add(2 * tick))
	if got[want.id] == 0 || len(got) != 1 {
		t.Fatalf("%s: runs per node since %s: %v, want only %s", step, since.Format("15:04:05.000"), got, want.id)
	}
}

func termOf(e *fxelection.Elector) (uint64, bool) {
	l, ok := e.Lease()
	return l.Term, ok
}

// TestAdapterRunsJobOnlyOnLeader: three schedulers with the adapter as
// gocron's elector; a job every 100 ms runs only on the leader, moves to the
// new leader after a graceful hand-over and after a cut, and terms never
// decrease.
func TestAdapterRunsJobOnlyOnLeader(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	addr := testserver.NewRedis(t, testserver.RedisOptions{}).Addr()
	log := &runLog{}
	nodes := startNodes(t, addr, 3, func(nd *node) gocron.Task {
		return gocron.NewTask(func() {
			term, leading := termOf(nd.e)
			i := log.begin(nd.id, term, leading)
			time.Sleep(10 * time.Millisecond)
			log.finish(i)
		})
	})
	l1, at := leader(t, nodes)
	time.Sleep(time.Second)
	expectOnly(t, log, at, l1, "steady state")

	if err := l1.e.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	l2, at := leader(t, nodes, l1)
	time.Sleep(time.Second)
	expectOnly(t, log, at, l2, "after hand-over")

	l2.f.Partition(true)
	l3, at := leader(t, nodes, l2)
	time.Sleep(time.Second)
	expectOnly(t, log, at, l3, "after cut")

	var prev uint64
	for _, r := range log.all() {
		if !r.leading {
			t.Errorf("%s ran at %s without leading", r.node, r.start.Format("15:04:05.000"))
		}
		if r.term < prev {
			t.Errorf("term went back from %d to %d", prev, r.term)
		}
		prev = max(prev, r.term)
	}
	t.Logf("%d runs; overlaps with the adapter alone: %v", len(log.all()), log.overlaps())
}

// TestTaskNeverOverlaps: with the task wrapper, a job longer than
// LeaseDuration−RenewDeadline never runs on two nodes at once across a cut,
// a graceful hand-over, and an elector stopped before its scheduler.
func TestTaskNeverOverlaps(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	addr := testserver.NewRedis(t, testserver.RedisOptions{}).Addr()
	log := &runLog{}
	const jobLen = 2 * time.Second // > leaseDur − renewDead
	nodes := startNodes(t, addr, 3, func(nd *node) gocron.Task {
		return fxgocron.NewTask(nd.e, func(ctx context.Context) error {
			lease, _ := fxelection.LeaseFromContext(ctx)
			i := log.begin(nd.id, lease.Term, true)
			defer log.finish(i)
			select {
			case <-ctx.Done():
			case <-time.After(jobLen):
			}
			return nil
		})
	})
	l1, _ := leader(t, nodes)
	time.Sleep(time.Second) // a long run is in flight

	l1.f.Partition(true) // cut: l1 steps down at its renew deadline
	l2, at := leader(t, nodes, l1)
	time.Sleep(time.Second)
	expectOnly(t, log, at, l2, "after cut")

	if err := l2.e.Resign(context.Background()); err != nil { // graceful hand-over
		t.Fatal(err)
	}
	l3, at := leader(t, nodes, l2, l1)
	time.Sleep(time.Second)
	expectOnly(t, log, at, l3, "after hand-over")

	if err := l3.e.Stop(context.Background()); err != nil { // elector first; its scheduler keeps ticking
		t.Fatal(err)
	}
	l4, at := leader(t, nodes, l3, l1)
	time.Sleep(time.Second)
	expectOnly(t, log, at, l4, "after the elector stopped before its scheduler")

	if o := log.overlaps(); len(o) > 0 {
		t.Fatalf("runs on two nodes at once:\n%s", strings.Join(o, "\n"))
	}
	var prev uint64
	for _, r := range log.all() {
		if r.term < prev {
			t.Errorf("term went back from %d to %d", prev, r.term)
		}
		prev = max(prev, r.term)
	}
	t.Logf("%d runs, leaders %s → %s → %s → %s, no overlap", len(log.all()), l1.id, l2.id, l3.id, l4.id)
}
