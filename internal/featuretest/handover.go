package featuretest

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// handOverBystanders returns the edit for candidatesWith that makes every
// candidate but the first two defer (Candidacy.Defer) when the backend cannot
// transfer in one step: a bystander woken by the release could otherwise
// take the free lease before the hint is written, which ResignTo documents.
func (s *env) handOverBystanders(t *testing.T) (edit func(i int, c *fxelection.Config), transfers bool) {
	_, transfers = s.newBackend(t).(backendkit.Transferer)
	return func(i int, c *fxelection.Config) {
		if i >= 2 && !transfers {
			c.Candidacy.Defer = func() bool { return true }
		}
	}, transfers
}

// resignToNamed: a leader hands over to a named follower with ResignTo
// (with two other candidates around), which leads within one retry period
// with push wake-up and within two without, with a higher term; the
// leader's own next term and the hint's are above the first.
func (s *env) resignToNamed(t *testing.T) {
	rec := &electiontesting.Recorder{}
	edit, transfers := s.handOverBystanders(t)
	cs := s.candidatesWith(t, electiontesting.Election(t), 4, rec, edit)
	tm := s.o.Timing
	// The first two candidates must be the leader and the successor: wait
	// for a leader among them (the bystanders may lead first if they do
	// not defer; then that one resigns to candidate 0).
	leader, _ := waitLeader(t, cs, nil, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	first, _ := leader.e.Lease()
	successor := cs[1]
	if leader == successor {
		successor = cs[0]
	}
	time.Sleep(tm.RetryPeriod * 3 / 2) // followers settle into their retry wait
	_, push := cs[0].inner.(backendkit.Notifier)

	asked := time.Now()
	if err := leader.e.ResignTo(context.Background(), successor.e.Status().Identity); err != nil {
		t.Fatalf("ResignTo: %v", err)
	}
	limit := 2 * tm.RetryPeriod
	if push {
		limit = tm.RetryPeriod
	}
	next, at := waitLeader(t, cs, leader, limit+2*time.Second) // slack for a loaded machine
	took := at.Sub(asked)
	if next != successor {
		t.Fatalf("%s leads after the hand-over to %s", next.e.Status().Identity, successor.e.Status().Identity)
	}
	if took > limit+time.Second {
		t.Errorf("hand-over took %v, want within %v (push %v) and slack", took, limit, push)
	}
	second, _ := next.e.Lease()
	if second.Term <= first.Term {
		t.Fatalf("successor's term %d, want above %d", second.Term, first.Term)
	}
	t.Logf("hand-over to a named follower took %v (push %v, transfer %v, retry period %v)", took, push, transfers, tm.RetryPeriod)
	rec.Check(t)
}

// resignToAbsent: a hand-over to a candidate that does not exist holds the
// lease back for the hint's window (LeaseDuration) only: then one of the
// others leads, with a term above the first.
func (s *env) resignToAbsent(t *testing.T) {
	rec := &electiontesting.Recorder{}
	cs := s.candidates(t, electiontesting.Election(t), 3, rec)
	tm := s.o.Timing
	leader, _ := waitLeader(t, cs, nil, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	first, _ := leader.e.Lease()
	asked := time.Now()
	if err := leader.e.ResignTo(context.Background(), "nobody-runs-this"); err != nil {
		t.Fatalf("ResignTo: %v", err)
	}
	hint, err := cs[0].inner.Get(context.Background(), first.Election)
	switch {
	case err != nil:
		// Taken by a candidate woken by the release before the hint was
		// written: allowed where the backend cannot transfer.
		if _, ok := cs[0].inner.(backendkit.Transferer); ok {
			t.Fatalf("Get after ResignTo on a backend that transfers: %v", err)
		}
	case hint.Holder == "nobody-runs-this":
		if hint.Term <= first.Term || hint.Metadata[handover.MetaFrom] != leader.e.Status().Identity {
			t.Fatalf("hint record %+v after term %d, want a higher term and %s=%s", hint, first.Term, handover.MetaFrom, leader.e.Status().Identity)
		}
		// Nobody leads while the hint lives (half the window: the rest
		// is left to clocks and load).
		deadline := asked.Add(tm.LeaseDuration / 2)
		for time.Now().Before(deadline) {
			for _, c := range cs {
				if c.e.IsLeader() {
					t.Fatalf("%s leads %v after a hand-over to an absent candidate, within its window %v", c.e.Status().Identity, time.Since(asked), tm.LeaseDuration)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	next, at := waitLeader(t, cs, nil, tm.LeaseDuration+2*backoff.JitterMax(tm.RetryPeriod)+5*time.Second)
	l, _ := next.e.Lease()
	if l.Term <= first.Term {
		t.Fatalf("term %d after the window, want above %d", l.Term, first.Term)
	}
	t.Logf("after a hand-over to an absent candidate, %s led after %v (window %v)", next.e.Status().Identity, at.Sub(asked), tm.LeaseDuration)
	rec.Check(t)
}
