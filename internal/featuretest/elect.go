package featuretest

import (
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// candidate is one elector in an end-to-end test with its own client.
type candidate struct {
	e      *fxelection.Elector
	faulty *faultinject.Backend
	inner  fxelection.Backend // behind faulty
}

func (s *env) candidates(t *testing.T, election string, n int, rec *electiontesting.Recorder) []*candidate {
	return s.candidatesWith(t, election, n, rec, nil)
}

// candidatesWith is candidates, with edit (when set) changing candidate
// i's Config before it starts.
func (s *env) candidatesWith(t *testing.T, election string, n int, rec *electiontesting.Recorder, edit func(i int, c *fxelection.Config)) []*candidate {
	t.Helper()
	out := make([]*candidate, n)
	for i := range out {
		cfg := fxelection.Config{
			Name:     election,
			Identity: fmt.Sprintf("e2e-%d", i),
			Metadata: map[string]string{"i": fmt.Sprint(i)},
			Timing: fxelection.Timing{
				LeaseDuration: s.o.Timing.LeaseDuration,
				RenewDeadline: s.o.Timing.RenewDeadline,
				RetryPeriod:   s.o.Timing.RetryPeriod,
				MaxBackoff:    4 * s.o.Timing.RetryPeriod,
			},
		}
		if edit != nil {
			edit(i, &cfg)
		}
		out[i] = s.startCandidate(t, cfg, rec)
	}
	return out
}

// waitLeader waits up to limit for exactly one candidate other than except
// to lead, and returns it with the time it was seen.
func waitLeader(t *testing.T, cs []*candidate, except *candidate, limit time.Duration) (*candidate, time.Time) {
	t.Helper()
	return electiontesting.WaitOneLeader(t, cs, except, func(c *candidate) bool { return c.e.IsLeader() }, limit)
}

// vanished: a leader cut off from the store stops believing within the
// renew deadline, and another candidate takes over only after the lease
// expired, within LeaseDuration plus a retry period.
func (s *env) vanished(t *testing.T) {
	rec := &electiontesting.Recorder{}
	cs := s.candidates(t, electiontesting.Election(t), 3, rec)
	tm := s.o.Timing
	leader, _ := waitLeader(t, cs, nil, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	first, _ := leader.e.Lease()

	cut := time.Now()
	leader.faulty.Partition(true)
	next, at := waitLeader(t, cs, leader, tm.LeaseDuration+2*tm.RetryPeriod+5*time.Second)
	if took := at.Sub(cut); took > tm.LeaseDuration+backoff.JitterMax(tm.RetryPeriod)+3*time.Second {
		t.Errorf("takeover took %v, want within lease + retry (%v + %v) and slack", took, tm.LeaseDuration, tm.RetryPeriod)
	}
	if leader.e.IsLeader() {
		t.Fatal("partitioned leader still believes it leads after another took over")
	}
	second, _ := next.e.Lease()
	if second.Term <= first.Term {
		t.Fatalf("term after takeover %d, want > %d", second.Term, first.Term)
	}
	// Heal: the old leader becomes a follower that knows the new leader.
	leader.faulty.Partition(false)
	deadline := time.Now().Add(2*tm.LeaseDuration + 5*time.Second)
	for {
		if l, ok := leader.e.Leader(); ok && l.Holder == next.e.Status().Identity {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("healed candidate never learned the new leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec.Check(t)
}
