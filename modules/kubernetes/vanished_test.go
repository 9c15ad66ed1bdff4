package kubelease_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/electiontesting"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// TestLeaseDeletedWhileHeld: the Lease is deleted from outside while an
// fxelection leader holds it. A follower that read it held does not create
// it again at once (the watch wakes it within milliseconds), since the old
// leader believes until its next renewal finds the Lease gone:
//
//   - the leader cut off from the API server (it cannot notice): the
//     follower leads only after the old leader's belief ended (its last
//     renewal's start plus its RenewDeadline), with a higher term;
//   - the leader connected: it finds the Lease gone at its next renewal
//     and takes it back at once with a higher term (its own lease); the
//     follower never leads beside it.
func TestLeaseDeletedWhileHeld(t *testing.T) {
	leases := newClient(t).CoordinationV1().Leases("default")
	del := func(t *testing.T, e string) time.Time {
		t.Helper()
		if err := leases.Delete(ctxT(t), kubelease.LeaseName(e), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}

	t.Run("leader cut off", func(t *testing.T) {
		e := electiontesting.Election(t)
		rec := &electiontesting.Recorder{}
		b, p := proxied(t)
		clock := &renewClock{Backend: b}
		a := electiontesting.StartCandidate(t, clock, e, "a", nil)
		a.Elector.AddObserver(rec)
		_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a}, leaderLimit)
		c := electiontesting.StartCandidate(t, newBackend(t, kubelease.Options{}), e, "c", nil)
		c.Elector.AddObserver(rec)
		electiontesting.WaitFor(t, leaderLimit, "the follower reads the Lease held", func() bool {
			ld, ok := c.Elector.Leader()
			return ok && ld.Holder == "a"
		})
		time.Sleep(2 * electiontesting.FaultRetry) // a read of the follower's after it learned the leader
		p.Partition()
		t.Cleanup(func() { // Stop of the cut-off elector: fail fast
			p.Refuse()
			p.Sever()
		})
		deleted := del(t, e)
		_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{c}, l.Term, leaderLimit)
		if l2.Holder != "c" || l2.Term <= l.Term {
			t.Fatalf("after the delete: %+v, want c with a term above %d", l2, l.Term)
		}
		end := clock.lastStart().Add(electiontesting.FaultRenew)
		after := startedAfter(t, rec, "c", end)
		if after < 0 {
			t.Fatalf("the follower led %v before the cut-off leader stopped believing (the Lease was deleted %v before its belief ended)", -after, end.Sub(deleted))
		}
		t.Logf("deleted; the follower led %v after the cut-off leader's belief ended (%v after the delete)", after, startedAfter(t, rec, "c", deleted))
	})

	t.Run("leader connected", func(t *testing.T) {
		e := electiontesting.Election(t)
		rec := &electiontesting.Recorder{}
		a := electiontesting.StartCandidate(t, newBackend(t, kubelease.Options{}), e, "a", nil)
		a.Elector.AddObserver(rec)
		_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a}, leaderLimit)
		c := electiontesting.StartCandidate(t, newBackend(t, kubelease.Options{}), e, "c", nil)
		c.Elector.AddObserver(rec)
		electiontesting.WaitFor(t, leaderLimit, "the follower reads the Lease held", func() bool {
			ld, ok := c.Elector.Leader()
			return ok && ld.Holder == "a"
		})
		time.Sleep(2 * electiontesting.FaultRetry)
		del(t, e)
		ev := electiontesting.WaitStopped(t, a, l.Term, leaderLimit)
		if ev.Reason != fxelection.ReasonLost {
			t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonLost)
		}
		_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{a, c}, l.Term, leaderLimit)
		if l2.Term <= l.Term {
			t.Fatalf("after the delete: %+v, want a term above %d", l2, l.Term)
		}
		time.Sleep(electiontesting.FaultLease + 2*electiontesting.FaultRetry) // the follower's wait, had it been woken for nothing
		if x, y, found := rec.Overlap(); found {
			t.Fatalf("two leaders at once: %+v and %+v", x, y)
		}
		t.Logf("deleted; leaders after: %+v", rec.Intervals())
	})
}
