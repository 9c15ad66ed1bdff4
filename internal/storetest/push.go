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
	// deadline two thirds of that. Default: 15s.
	Retry time.Duration
	// Wait bounds the waits for the first leader and for the follower to
	// see it. Default: 10s.
	Wait time.Duration
	// Handover bounds the follower's takeover once the leader stopped.
	// Default: 5s.
	Handover time.Duration
	// BeforeStop, if set, runs once the follower sees the leader and
	// before the leader stops (to restart the store, say).
	BeforeStop func(t *testing.T)
}

// CheckPushHandover checks that a backend implementing
// backendkit.Notifier wakes a follower when its leader lets go: an elector
// on leader leads, an elector on follower sees it, then (after BeforeStop)
// the leader stops, and the follower must lead within Handover, long
// before its next retry: only a wake-up from the store makes that
// possible. It logs how long the hand-over took.
func CheckPushHandover(t *testing.T, leader, follower fxelection.Backend, opts PushOptions) {
	t.Helper()
	if opts.Retry == 0 {
		opts.Retry = 15 * time.Second
	}
	if opts.Wait == 0 {
		opts.Wait = 10 * time.Second
	}
	if opts.Handover == 0 {
		opts.Handover = 5 * time.Second
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
