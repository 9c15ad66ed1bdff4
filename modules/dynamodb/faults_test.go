package ddblease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// leaderLimit bounds every wait for a leader: generous, for a loaded
// machine and an observed-time store (a takeover waits a full lease).
const leaderLimit = 45 * time.Second

// backendOn returns a backend on a client of its own of endpoint with no
// SDK retries (the elector retries).
func backendOn(t testing.TB, endpoint string, opts ddblease.Options) *ddblease.Backend {
	t.Helper()
	if opts.Table == "" {
		opts.Table = table
	}
	b, err := ddblease.New(clientOn(t, endpoint, 1), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkNoOverlap(t *testing.T, rec *electiontesting.Recorder) {
	t.Helper()
	if a, b, found := rec.Overlap(); found {
		t.Fatalf("two leaders at once: %+v and %+v", a, b)
	}
}

// TestItemDeletedFromOutside: an operator deletes the election's item
// while a leader holds it. The leader learns it at its next renewal and
// steps down; the next leader's term is higher (clock-seeded).
func TestItemDeletedFromOutside(t *testing.T) {
	e := electiontesting.Election(t)
	var cs []*electiontesting.Candidate
	for _, id := range []string{"a", "b"} {
		cs = append(cs, electiontesting.StartCandidate(t, newBackend(t, ddblease.Options{}), e, id, nil))
	}
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)
	deleteItem(t, table, e)
	ev := electiontesting.WaitStopped(t, leader, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonLost {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, l2 := electiontesting.WaitNewTerm(t, cs, l.Term, leaderLimit)
	if l2.Term <= l.Term {
		t.Fatalf("term after the delete %d, want > %d", l2.Term, l.Term)
	}
}

// TestServerKilledAndRestarted: DynamoDB Local is killed (SIGKILL) under a
// leader, which steps down at its renew deadline and reports store
// failures; the server restarts on the same port and data file and a
// leader is elected again with a term no lower (the holder may keep its
// surviving item's term; another holder's is higher), and no two
// candidates ever lead at once.
func TestServerKilledAndRestarted(t *testing.T) {
	testtier.Require(t, testtier.E2E) // a DynamoDB Local of its own, killed and restarted
	srv := testserver.NewDynamoDB(t, testserver.DynamoDBOptions{})
	e := electiontesting.Election(t)
	rec := &electiontesting.Recorder{}
	var cs []*electiontesting.Candidate
	for _, id := range []string{"a", "b"} {
		c := electiontesting.StartCandidate(t, backendOn(t, srv.Endpoint(), ddblease.Options{}), e, id, nil)
		c.Elector.AddObserver(rec)
		cs = append(cs, c)
	}
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)

	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := electiontesting.WaitStopped(t, leader, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	leader.Events.WaitFor(t, leaderLimit, "a store failure event", electiontesting.IsStoreFailure)

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	next, l2 := electiontesting.WaitLeader(t, cs, 2*leaderLimit)
	switch {
	case l2.Term < l.Term:
		t.Errorf("%s leads term %d after the restart, below %d", next.Elector.Config().Identity, l2.Term, l.Term)
	case l2.Holder != l.Holder && l2.Term == l.Term:
		t.Errorf("new holder %s got term %d, want > %d", next.Elector.Config().Identity, l2.Term, l.Term)
	}
	t.Logf("before: %s term %d; after the restart: %s term %d", l.Holder, l.Term, l2.Holder, l2.Term)
	checkNoOverlap(t, rec)
}

// TestPartitionedLeader: the leader's connections are cut (an
// electiontest.Proxy refuses new ones and resets the open ones). It steps
// down at its renew deadline; the other candidate takes over only after
// watching the last write for a full lease, with a higher term; on one
// clock, the two never lead at once. After the heal the old leader
// follows.
func TestPartitionedLeader(t *testing.T) {
	srv := server(t)
	p, err := electiontest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	e := electiontesting.Election(t)
	rec := &electiontesting.Recorder{}
	behind := electiontesting.StartCandidate(t, backendOn(t, "http://"+p.Addr(), ddblease.Options{}), e, "behind-proxy", nil)
	behind.Elector.AddObserver(rec)
	_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{behind}, leaderLimit)
	direct := electiontesting.StartCandidate(t, backendOn(t, srv.Endpoint(), ddblease.Options{}), e, "direct", nil)
	direct.Elector.AddObserver(rec)
	electiontesting.WaitFor(t, leaderLimit, "the follower to see the leader", func() bool {
		l, ok := direct.Elector.Leader()
		return ok && l.Holder == "behind-proxy"
	})

	p.Refuse()
	p.Sever()
	electiontesting.WaitStopped(t, behind, l.Term, leaderLimit)
	_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{behind, direct}, l.Term, leaderLimit)
	if l2.Holder != "direct" || l2.Term <= l.Term {
		t.Fatalf("after the cut %s leads term %d, want direct with a term > %d", l2.Holder, l2.Term, l.Term)
	}
	p.Heal()
	electiontesting.WaitFor(t, leaderLimit, "the healed candidate to follow direct", func() bool {
		l, ok := behind.Elector.Leader()
		return ok && l.Holder == "direct"
	})
	checkNoOverlap(t, rec)
}
