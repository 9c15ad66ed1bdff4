package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/watch"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// Watcher scenario timing: short, with the core's margins.
const (
	watchPoll  = 500 * time.Millisecond
	watchLease = 2 * time.Second
	watchRenew = 1300 * time.Millisecond
	watchRetry = 300 * time.Millisecond
	// watchBound is 1.2 × PollInterval plus a generous allowance for
	// one Get and a loaded machine.
	watchBound = watchPoll*6/5 + time.Second
)

// RunWatcherTest checks a watch.Watcher on a real store: with three
// electors on backends from newBackend (one per elector, and one for the
// watcher), the watcher reports every change of leader — graceful hand-over
// (Resign), a stopped leader, a leader cut off from the store — within
// 1.2 × PollInterval plus one second, with the leader's metadata,
// and OnChange sees every leader in order. It takes a few lease durations
// (2s each).
func RunWatcherTest(t *testing.T, newBackend func(t *testing.T) fxelection.Backend) {
	ctx := context.Background()
	election := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	changes := &electiontesting.ChangeLog{}
	w, err := watch.New(watch.Config{Name: election, PollInterval: watchPoll, OnChange: changes.Add}, newBackend(t))
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
		deadline := time.Now().Add(5 * watchLease)
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
		for {
			info, _ := w.Leader()
			if info.HasLeader && info.Leader.Holder == lease.Holder && info.Leader.Term == lease.Term {
				if info.Leader.Metadata["addr"] != lease.Holder+":8080" {
					t.Fatalf("%s: metadata %v", step, info.Leader.Metadata)
				}
				t.Logf("%s: %s (term %d) seen %v after it led", step, lease.Holder, lease.Term, time.Since(led).Round(time.Millisecond))
				break
			}
			if time.Since(led) > watchBound {
				t.Fatalf("%s: watcher did not report %s (term %d) within %v; it reports %+v", step, lease.Holder, lease.Term, watchBound, info)
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
