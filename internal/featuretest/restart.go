package featuretest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// fixedIdentityRestart: two electors with one identity (a process
// restarted with a fixed Identity while its predecessor is only paused: a
// SIGSTOP, a frozen VM, a partition). The second leads at once, before
// the first's lease could have expired, with a strictly higher term, so
// every fencing guard refuses the first's late writes.
func (s *env) fixedIdentityRestart(t *testing.T) {
	e := electiontesting.Election(t)
	cfg := fxelection.Config{
		Name:     e,
		Identity: "fixed",
		Timing: fxelection.Timing{
			LeaseDuration: s.o.Timing.LeaseDuration,
			RenewDeadline: s.o.Timing.RenewDeadline,
			RetryPeriod:   s.o.Timing.RetryPeriod,
			MaxBackoff:    4 * s.o.Timing.RetryPeriod,
		},
	}
	first := faultinject.New(s.newBackend(t))
	e1, err := fxelection.New(cfg, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e1.Stop(context.Background()) })
	l1 := waitLease(t, e1, s.expiryLimit())

	first.Partition(true)
	partitioned := time.Now()
	e2, err := fxelection.New(cfg, s.newBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e2.Stop(context.Background()) })
	l2 := waitLease(t, e2, s.expiryLimit())
	if took := time.Since(partitioned); took >= cfg.LeaseDuration-cfg.RetryPeriod {
		// The record's holder is the caller's identity: no wait for
		// expiry is needed, and a backend that waits has misread it.
		t.Errorf("the restarted identity led %v after its predecessor was partitioned, want before its lease (%v) could expire", took, cfg.LeaseDuration)
	}
	if l2.Term <= l1.Term {
		t.Fatalf("restarted process leads with term %d, its paused predecessor with %d: want a strictly higher term", l2.Term, l1.Term)
	}
}

// waitLease waits up to limit for e to lead and returns its lease.
func waitLease(t *testing.T, e *fxelection.Elector, limit time.Duration) fxelection.Lease {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if l, ok := e.Lease(); ok {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leadership within %v", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// manyElections runs many electors, one election each, on one shared
// backend in one Group (so that a backend implementing BatchRenewer gets
// batches):
// every one leads and keeps leading through several retry periods.
func (s *env) manyElections(t *testing.T) {
	const n = 40
	be := s.newBackend(t)
	tm := s.o.Timing
	base := electiontesting.Election(t)
	// A leadership the store says is lost (ReasonLost) is a failure; one
	// that ended at the renew deadline because renewals were slow (a
	// machine oversubscribed by the rest of the test run) is not: every
	// elector must lead again.
	var lost, slow atomic.Int64
	group, err := fxelection.NewGroup(be)
	if err != nil {
		t.Fatal(err)
	}
	es := make([]*fxelection.Elector, n)
	for i := range es {
		e, err := group.New(fxelection.Config{
			Name: fmt.Sprintf("%s-%d", base, i), Identity: "many",
			Timing: fxelection.Timing{
				LeaseDuration: tm.LeaseDuration,
				RenewDeadline: tm.RenewDeadline,
				RetryPeriod:   tm.RetryPeriod,
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventStoppedLeading {
				switch ev.Reason {
				case fxelection.ReasonStopped:
				case fxelection.ReasonDeadline:
					slow.Add(1)
				default:
					lost.Add(1)
				}
			}
		}))
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		es[i] = e
	}
	allLead := func(what string) {
		deadline := time.Now().Add(tm.LeaseDuration + 30*time.Second)
		for {
			leading := 0
			for _, e := range es {
				if e.IsLeader() {
					leading++
				}
			}
			if leading == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d electors lead", what, leading, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	allLead("start")
	time.Sleep(2 * tm.RetryPeriod) // every one renews at least once
	allLead("after renewing")
	if l := lost.Load(); l > 0 {
		t.Fatalf("%d leaderships lost while renewing", l)
	}
	if n := slow.Load(); n > 0 {
		t.Logf("%d leaderships ended at the renew deadline (slow renewals on a busy machine) and were taken again", n)
	}
}
