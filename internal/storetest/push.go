package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// PushOptions tune CheckPushHandover; zero fields take the defaults.
type PushOptions struct {
	// Retry is both electors' retry period and maximum backoff, far
	// longer than Handover; their lease is 4×Retry and their renew
	// deadline two thirds of that. Default: 2 minutes.
	Retry time.Duration
	// Wait bounds the waits for the first leader and for the follower to
	// see it. Default: one minute.
	Wait time.Duration
	// Handover bounds the follower's takeover once the leader stopped; it
	// must stay below Retry (a follower waits at least Retry between its
	// own attempts), and the gap between the two is the slack a loaded
	// machine gets. Default: one minute.
	Handover time.Duration
	// BeforeStop, if set, runs once the follower sees the leader and
	// before the leader stops (to restart the store, say).
	BeforeStop func(t *testing.T)
}

// CheckPushHandover checks that a backend implementing
// backendkit.Notifier wakes a follower when its leader lets go: an elector
// on leader leads, an elector on follower sees it, then (after BeforeStop)
// the leader stops, and the follower must lead within Handover, before
// its next retry (which comes no sooner than Retry after its last
// attempt): only a wake-up from the store makes that possible. It logs how
// long the hand-over took.
func CheckPushHandover(t *testing.T, leader, follower fxelection.Backend, opts PushOptions) {
	t.Helper()
	if opts.Retry == 0 {
		opts.Retry = 2 * time.Minute
	}
	if opts.Wait == 0 {
		opts.Wait = time.Minute
	}
	if opts.Handover == 0 {
		opts.Handover = time.Minute
	}
	if opts.Handover >= opts.Retry {
		t.Fatalf("CheckPushHandover: Handover %v must be below Retry %v", opts.Handover, opts.Retry)
	}
	slow := func(cfg *fxelection.Config) {
		cfg.LeaseDuration, cfg.RetryPeriod, cfg.MaxBackoff = 4*opts.Retry, opts.Retry, opts.Retry
		cfg.RenewDeadline = cfg.LeaseDuration * 2 / 3
	}
	e := electiontesting.Election(t)
	l := electiontesting.StartCandidate(t, leader, e, "leader", slow)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{l}, opts.Wait)
	f := electiontesting.StartCandidate(t, follower, e, "follower", slow)
	electiontesting.WaitFor(t, opts.Wait, "the follower to see the leader", func() bool {
		got, ok := f.Elector.Leader()
		return ok && got.Holder == "leader"
	})
	if opts.BeforeStop != nil {
		opts.BeforeStop(t)
	}
	stopped := time.Now()
	if err := l.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{f}, opts.Handover)
	t.Logf("hand-over with push took %v", time.Since(stopped))
}
