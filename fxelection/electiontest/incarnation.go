package electiontest

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// The contract's rule for incarnations (backendkit.AcquireRequest): a term
// names one leadership of one incarnation. These cases hold every backend
// to it.

// reqInc is s.req for incarnation inc.
func (s *suite) reqInc(election, id, inc string, d time.Duration) backendkit.AcquireRequest {
	r := s.req(election, id, d)
	r.Incarnation = inc
	return r
}

// reacquireSameIncarnation: a retry by the same incarnation (its response
// was lost) keeps the term and the lease; another identity is refused.
func (s *suite) reacquireSameIncarnation(t *testing.T) {
	e, inc := electiontesting.Election(t), backendkit.NewIncarnation()
	la := mustAcquire(t, s.newBackend(t), s.reqInc(e, "a", inc, 0))
	if la.Incarnation != "" && la.Incarnation != inc {
		t.Fatalf("lease carries incarnation %q, want %q or none", la.Incarnation, inc)
	}
	la2 := mustAcquire(t, s.newBackend(t), s.reqInc(e, "a", inc, 0))
	if la2.Term != la.Term || la2.Holder != "a" {
		t.Fatalf("re-acquire by the same incarnation: term %d holder %q, want term %d", la2.Term, la2.Holder, la.Term)
	}
	_, err := s.newBackend(t).Acquire(electiontesting.Context(t), s.reqInc(e, "b", backendkit.NewIncarnation(), 0))
	wantHeld(t, err, "a")
}

// newIncarnationHigherTerm: a restarted process with the same identity
// takes the lease at once, with a strictly higher term; its predecessor can
// neither renew nor release what it now holds.
func (s *suite) newIncarnationHigherTerm(t *testing.T) {
	e := electiontesting.Election(t)
	old, restarted := s.newBackend(t), s.newBackend(t)
	l1 := mustAcquire(t, old, s.reqInc(e, "a", backendkit.NewIncarnation(), 0))
	l1, err := old.Renew(electiontesting.Context(t), l1)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	l2 := mustAcquire(t, restarted, s.reqInc(e, "a", backendkit.NewIncarnation(), 0))
	if l2.Term <= l1.Term {
		t.Fatalf("new incarnation of the same identity got term %d, want > %d: both would pass every fencing guard", l2.Term, l1.Term)
	}
	if _, err := old.Renew(electiontesting.Context(t), l1); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("predecessor's Renew after the new incarnation took over: %v, want ErrLeaseLost", err)
	}
	if err := old.Release(electiontesting.Context(t), l1); err != nil {
		t.Fatalf("predecessor's Release: %v, want nil (not its lease any more)", err)
	}
	got, err := s.newBackend(t).Get(electiontesting.Context(t), e)
	if err != nil || got.Term != l2.Term || got.Holder != "a" {
		t.Fatalf("Get after the predecessor's Release = %+v, %v; want the new incarnation's term %d", got, err, l2.Term)
	}
	if _, err := restarted.Renew(electiontesting.Context(t), l2); err != nil {
		t.Fatalf("new incarnation's Renew: %v", err)
	}
	// And back: the first incarnation again (a third run reusing nothing
	// but the identity) is a new leadership too.
	l3 := mustAcquire(t, old, s.reqInc(e, "a", backendkit.NewIncarnation(), 0))
	if l3.Term <= l2.Term {
		t.Fatalf("third incarnation got term %d, want > %d", l3.Term, l2.Term)
	}
}

// termGrowsAfterOwnRelease: a lease released and taken again by the same
// identity and incarnation is a new leadership: a strictly higher term,
// with a Get in between seeing no lease.
func (s *suite) termGrowsAfterOwnRelease(t *testing.T) {
	b, e, inc := s.newBackend(t), electiontesting.Election(t), backendkit.NewIncarnation()
	var last uint64
	for i := range 3 {
		l := mustAcquire(t, b, s.reqInc(e, "a", inc, 0))
		if l.Term <= last {
			t.Fatalf("acquisition %d after a release: term %d, want > %d", i, l.Term, last)
		}
		last = l.Term
		if err := b.Release(electiontesting.Context(t), l); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if _, err := b.Get(electiontesting.Context(t), e); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("Get after Release: %v, want ErrNoLease", err)
		}
	}
}

// recreatedStore: a follower watched a record for longer than a full
// lease; the store's namespace is then deleted and re-created
// (Options.Recreate, else the election's records deleted) and a new leader
// writes. Stores whose versions start again (a NATS bucket) give the new
// record the version the follower watched: it must still wait a full lease
// of the new record, whatever that record's duration.
func (s *suite) recreatedStore(t *testing.T) {
	recreate := s.o.Recreate
	if recreate == nil {
		recreate = s.o.DeleteRecord
	}
	if recreate == nil {
		t.Fatal("Options.DeleteRecord is required")
	}
	// The new leader's lease is shorter than the time the follower has
	// watched the old record, so that a follower keyed on the version
	// alone would take it over at once; on a store that expires leases
	// itself, the follower must try while the new lease is still live.
	// A try that came too late (a loaded machine) proves nothing: the
	// scenario is set up again, at most three times.
	watch, short := 3*s.o.TTL, 2*s.o.TTL
	for range 3 {
		e := electiontesting.Election(t)
		old, follower, leader := s.newBackend(t), s.newBackend(t), s.newBackend(t)
		// A fresh namespace first, so that on a store whose versions
		// start again the old record and the new one get the same
		// version (a NATS bucket's revision 1).
		if s.o.Recreate != nil {
			recreate(t, e)
		}
		mustAcquire(t, old, s.reqInc(e, "old", backendkit.NewIncarnation(), s.o.TTL))
		_, err := follower.Acquire(electiontesting.Context(t), s.reqInc(e, "f", backendkit.NewIncarnation(), 0))
		wantHeld(t, err, "old")
		time.Sleep(watch)
		recreate(t, e)
		ln := mustAcquire(t, leader, s.reqInc(e, "new", backendkit.NewIncarnation(), short))
		won := time.Now()
		_, err = follower.Acquire(electiontesting.Context(t), s.reqInc(e, "f", backendkit.NewIncarnation(), 0))
		if time.Since(won) >= short/2 {
			t.Logf("follower's attempt came %v after the new leader's write: too late to tell, setting up again", time.Since(won))
			continue
		}
		he := wantHeld(t, err, "new")
		if he.Holder.Term != ln.Term {
			t.Fatalf("follower sees term %d, the new leader holds %d", he.Holder.Term, ln.Term)
		}
		return
	}
	t.Fatal("three set-ups in a row too slow to tell (the machine is overloaded)")
}
