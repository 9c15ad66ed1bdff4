package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/watch"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// Watcher scenario timing: short, with the core's margins.
const (
	watchPoll  = 500 * time.Millisecond
	watchLease = 2 * time.Second
	watchRenew = 1300 * time.Millisecond
	watchRetry = 300 * time.Millisecond
	// watchPolls is how many of the watcher's polls may complete, each
	// begun after a new leader led, before the watcher reports it: the
	// first such poll reads the new lease; one more covers the instant
	// between a poll's answer and the watcher's report of it.
	watchPolls = 2
	// watchBackstop bounds every wait of the scenario against the wall
	// clock, only so that a stuck watcher or elector fails the test
	// rather than hanging it; the bounds that matter are counted.
	watchBackstop = time.Minute
)

// countingGets counts the Gets a watcher makes that began after a mark,
// once each has returned. Embedding the backend keeps its Get and
// Subscribe (the wrapper of a Notifier is one too: notifyingGets).
type countingGets struct {
	fxelection.Backend
	mark atomic.Int64 // UnixNano; Gets begun after it are counted
	done atomic.Int64
}

func (c *countingGets) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	began := time.Now().UnixNano()
	l, err := c.Backend.Get(ctx, election)
	if began > c.mark.Load() {
		c.done.Add(1)
	}
	return l, err
}

// since sets the mark to now and resets the count.
func (c *countingGets) since() {
	c.mark.Store(time.Now().UnixNano())
	c.done.Store(0)
}

// notifyingGets is countingGets over a backend that pushes releases.
type notifyingGets struct {
	*countingGets
	n backendkit.Notifier
}

func (c notifyingGets) Subscribe(election string, wake func()) (cancel func()) {
	return c.n.Subscribe(election, wake)
}

// RunWatcherTest checks a watch.Watcher on a real store: with three
// electors on backends from newBackend (one per elector, and one for the
// watcher), the watcher reports every change of leader — graceful hand-over
// (Resign), a stopped leader, a leader cut off from the store — by the end
// of its second poll begun after the new leader led (polls are at most
// 1.2 × PollInterval apart; they are counted, not timed, so a loaded
// machine slows the test without failing it), with the leader's metadata,
// and OnChange sees every leader in order. It takes a few lease durations
// (2s each).
func RunWatcherTest(t *testing.T, newBackend func(t *testing.T) fxelection.Backend) {
	ctx := context.Background()
	election := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	changes := &electiontesting.ChangeLog{}
	counted := &countingGets{Backend: newBackend(t)}
	var wb fxelection.Backend = counted
	if n, ok := counted.Backend.(backendkit.Notifier); ok {
		wb = notifyingGets{countingGets: counted, n: n}
	}
	w, err := watch.New(watch.Config{Name: election, PollInterval: watchPoll, OnChange: changes.Add}, wb)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(ctx); err != nil {
			t.Error(err)
		}
	})

	var nodes []*electiontesting.Candidate
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, electiontesting.StartFaultyCandidate(t, newBackend(t), election, id, func(cfg *fxelection.Config) {
			cfg.Metadata = map[string]string{"addr": id + ":8080"}
			cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, cfg.MaxBackoff = watchLease, watchRenew, watchRetry, 0
		}))
	}

	// nextLeader waits for a node other than not to lead, then for the
	// watcher to report it, and checks the delay against the bound.
	var leaders []fxelection.Lease
	nextLeader := func(step string, not ...*electiontesting.Candidate) *electiontesting.Candidate {
		t.Helper()
		var l *electiontesting.Candidate
		var lease fxelection.Lease
		deadline := time.Now().Add(watchBackstop)
		for l == nil {
			for _, n := range nodes {
				if got, ok := n.Elector.Lease(); ok && !slices.Contains(not, n) {
					l, lease = n, got
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no new leader", step)
			}
			time.Sleep(2 * time.Millisecond)
		}
		led := time.Now()
		counted.since()
		for {
			info, _ := w.Leader()
			if info.HasLeader && info.Leader.Holder == lease.Holder && info.Leader.Term == lease.Term {
				if info.Leader.Metadata["addr"] != lease.Holder+":8080" {
					t.Fatalf("%s: metadata %v", step, info.Leader.Metadata)
				}
				t.Logf("%s: %s (term %d) seen %v after it led", step, lease.Holder, lease.Term, time.Since(led).Round(time.Millisecond))
				break
			}
			if n := counted.done.Load(); n > watchPolls {
				t.Fatalf("%s: watcher did not report %s (term %d) within %d polls begun after it led; it reports %+v", step, lease.Holder, lease.Term, watchPolls, info)
			}
			if time.Since(led) > watchBackstop {
				t.Fatalf("%s: watcher did not report %s (term %d), nor completed %d polls, within %v; it reports %+v", step, lease.Holder, lease.Term, watchPolls, watchBackstop, info)
			}
			time.Sleep(2 * time.Millisecond)
		}
		leaders = append(leaders, lease)
		return l
	}

	l1 := nextLeader("first leader")
	if err := l1.Elector.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l2 := nextLeader("graceful hand-over (Resign)", l1)
	if err := l2.Elector.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	l3 := nextLeader("leader stopped", l2)
	l3.Faulty.Partition(true)
	nextLeader("leader cut off", l2, l3)

	// Every leader appears in the change log, in order.
	seen := changes.Leaders()
	i := 0
	for _, s := range seen {
		if i < len(leaders) && s.Holder == leaders[i].Holder && s.Term == leaders[i].Term {
			i++
		}
	}
	if i != len(leaders) {
		t.Fatalf("OnChange saw %d of %d leaders in order: %q", i, len(leaders), changes.Holders())
	}
}
