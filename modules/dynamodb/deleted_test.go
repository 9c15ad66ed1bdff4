package ddblease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// An item this package wrote is never deleted by it (release marks it
// released), so an item a candidate read held and then finds missing was
// deleted from outside while its holder may still believe it leads. The
// candidate treats the absence as that record and creates the item only
// once it has seen the absence for the record's full duration. Every
// bound below is a lower bound on when a takeover may happen.

// TestDeletedHeldItemWaitsALease: a follower that read a's item held and
// then finds it deleted is refused (held by a) until it has seen the item
// missing for a's duration, then creates it with a higher term; Get
// reports no lease meanwhile. The holder's own identity (a restarted
// process: another incarnation) takes it at once with a higher term.
func TestDeletedHeldItemWaitsALease(t *testing.T) {
	const d = 3 * time.Second
	a, b, e := newBackend(t, ddblease.Options{}), newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctxT(t), req(e, "b", d))
	wantHeldBy(t, err, "a")

	deleteItem(t, table, e)
	deleted := time.Now()
	_, err = b.Acquire(ctxT(t), req(e, "b", d))
	if he := wantHeldBy(t, err, "a"); he.Holder.Term != la.Term {
		t.Fatalf("refusal names term %d, want the deleted holder's %d", he.Holder.Term, la.Term)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get of the deleted item: %v, want ErrNoLease", err)
	}
	lb, at := pollAcquire(t, b, req(e, "b", d), 50*time.Millisecond, 3*d+10*time.Second)
	if took := at.Sub(deleted); took < d {
		t.Fatalf("created %v after the delete, before a full lease %v of seeing it missing", took.Round(time.Millisecond), d)
	}
	if lb.Term <= la.Term {
		t.Fatalf("term after the delete %d, want > %d", lb.Term, la.Term)
	}

	// The holder's identity, on the follower's Backend.
	e2 := electiontesting.Election(t) + "-self"
	la2, err := a.Acquire(ctxT(t), req(e2, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctxT(t), req(e2, "b", time.Minute))
	wantHeldBy(t, err, "a")
	deleteItem(t, table, e2)
	restarted := req(e2, "a", time.Minute)
	restarted.Incarnation = backendkit.NewIncarnation()
	la3, err := b.Acquire(ctxT(t), restarted)
	if err != nil || la3.Term <= la2.Term {
		t.Fatalf("the holder's identity after the delete: %+v, %v; want the lease at once with a term > %d", la3, err, la2.Term)
	}
}

// TestItemDeletedFromOutsideNoOverlap: an operator deletes the item (a
// DeleteItem) while a leader holds it and the other candidate follows.
// The follower does not lead before the leader stopped believing: the
// leader steps down at its next renewal (lease lost), or, cut off from
// DynamoDB at the moment of the delete, at its RenewDeadline; the
// follower creates the item a full lease after it found it missing. On
// one clock the two never lead at once, and the next term is higher.
func TestItemDeletedFromOutsideNoOverlap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cut    bool
		reason fxelection.StopReason
	}{
		{"leader renews", false, fxelection.ReasonLost},
		{"leader cut off", true, fxelection.ReasonDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := electiontesting.Election(t)
			rec := &electiontesting.Recorder{}
			var cs []*electiontesting.Candidate
			for _, id := range []string{"a", "b"} {
				c := electiontesting.StartFaultyCandidate(t, newBackend(t, ddblease.Options{}), e, id, nil)
				c.Elector.AddObserver(rec)
				cs = append(cs, c)
			}
			leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)
			follower := cs[0]
			if follower == leader {
				follower = cs[1]
			}
			electiontesting.WaitFor(t, leaderLimit, "the follower to see the leader", func() bool {
				fl, ok := follower.Elector.Leader()
				return ok && fl.Term == l.Term
			})
			if tc.cut {
				leader.Faulty.Partition(true)
			}
			deleteItem(t, table, e)
			ev := electiontesting.WaitStopped(t, leader, l.Term, leaderLimit)
			if ev.Reason != tc.reason {
				t.Errorf("step-down reason %q, want %q", ev.Reason, tc.reason)
			}
			_, l2 := electiontesting.WaitNewTerm(t, cs, l.Term, leaderLimit)
			leader.Faulty.Partition(false)
			if l2.Term <= l.Term {
				t.Fatalf("term after the delete %d, want > %d", l2.Term, l.Term)
			}
			iv := rec.Intervals()
			if len(iv) >= 2 && !iv[0].End.IsZero() {
				t.Logf("the next leader (%s) started %v after the old one (%s) stopped believing", iv[1].Identity, iv[1].Start.Sub(iv[0].End).Round(time.Millisecond), iv[0].Identity)
			}
			checkNoOverlap(t, rec)
		})
	}
}
