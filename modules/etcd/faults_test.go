package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testtier"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

// twoCandidates starts "a" and "b" on separate clients of endpoints.
func twoCandidates(t *testing.T, election string, rec *electiontesting.Recorder, tweak func(*fxelection.Config), endpoints ...string) []*electiontesting.Candidate {
	t.Helper()
	var cs []*electiontesting.Candidate
	for _, id := range []string{"a", "b"} {
		c := electiontesting.StartCandidate(t, newBackend(t, Options{}, endpoints...), election, id, tweak)
		if rec != nil {
			c.Elector.AddObserver(rec)
		}
		cs = append(cs, c)
	}
	return cs
}

func checkNoOverlap(t *testing.T, rec *electiontesting.Recorder) {
	t.Helper()
	if a, b, found := rec.Overlap(); found {
		t.Fatalf("two leaders at once: %+v and %+v", a, b)
	}
}

// TestKeyDeletedFromOutside: an operator deletes the election's key while a
// leader holds it. The leader learns it at its next renewal and steps down;
// the next leader's term is higher, since etcd revisions only grow.
func TestKeyDeletedFromOutside(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	e := electionName(t)
	cs := twoCandidates(t, e, nil, nil, c.Endpoints()...)
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)
	if _, err := admin.Delete(ctxT(t), DefaultKeyPrefix+e); err != nil {
		t.Fatal(err)
	}
	ev := electiontesting.WaitStopped(t, leader, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonLost {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, l2 := electiontesting.WaitNewTerm(t, cs, l.Term, leaderLimit)
	if l2.Term <= l.Term {
		t.Fatalf("term after the delete %d, want > %d", l2.Term, l.Term)
	}
}

// TestServerStoppedAndRestarted: etcd stops under a leader, which steps down
// at its renew deadline and reports store failures; etcd restarts on the
// same data directory and a leader is elected again, with a term no lower
// (the same holder re-acquiring its own surviving key keeps its term; a
// new key, or a new holder, gets a higher one), and no two candidates ever
// lead at once.
func TestServerStoppedAndRestarted(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	e := electionName(t)
	rec := &electiontesting.Recorder{}
	cs := twoCandidates(t, e, rec, nil, c.Endpoints()...)
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)

	c.Members[0].Stop()
	ev := electiontesting.WaitStopped(t, leader, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	leader.Events.WaitFor(t, leaderLimit, "a store failure event", electiontesting.IsStoreFailure)

	if err := c.Members[0].Restart(); err != nil {
		t.Fatal(err)
	}
	next, l2 := electiontesting.WaitLeader(t, cs, 2*leaderLimit)
	// The holder may keep its term (its key outlived the outage: etcd
	// gives every lease its full TTL again when it restarts) or get a
	// higher one (the key expired first); another holder's is higher.
	switch {
	case l2.Term < l.Term:
		t.Errorf("%s leads term %d after the restart, below %d", next.Elector.Config().Identity, l2.Term, l.Term)
	case l2.Holder != l.Holder && l2.Term == l.Term:
		t.Errorf("new holder %s got term %d, want > %d", next.Elector.Config().Identity, l2.Term, l.Term)
	}
	t.Logf("before: %s term %d; after the restart: %s term %d", l.Holder, l.Term, l2.Holder, l2.Term)
	checkNoOverlap(t, rec)
}

// TestPartitionedLeader: the leader's client is cut off from etcd (a
// proxy drops its connections). It steps down at its renew deadline; the
// other candidate takes over only once etcd expired the lease, with a
// higher term; on one clock, the two never lead at once.
func TestPartitionedLeader(t *testing.T) {
	c := sharedCluster(t)
	p, endpoint := newProxy(t, c.Members[0].Endpoint())
	e := electionName(t)
	rec := &electiontesting.Recorder{}
	behind := electiontesting.StartCandidate(t, newBackend(t, Options{}, endpoint), e, "behind-proxy", nil)
	behind.Elector.AddObserver(rec)
	_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{behind}, leaderLimit)
	direct := electiontesting.StartCandidate(t, newBackend(t, Options{}, c.Endpoints()...), e, "direct", nil)
	direct.Elector.AddObserver(rec)
	electiontesting.WaitFor(t, leaderLimit, "the follower to see the leader", func() bool {
		l, ok := direct.Elector.Leader()
		return ok && l.Holder == "behind-proxy"
	})

	cut(p)
	electiontesting.WaitStopped(t, behind, l.Term, leaderLimit)
	_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{behind, direct}, l.Term, leaderLimit)
	if l2.Holder != "direct" || l2.Term <= l.Term {
		t.Fatalf("after the cut %s leads term %d, want direct with a term > %d", l2.Holder, l2.Term, l.Term)
	}
	checkNoOverlap(t, rec)
	p.Heal()
}

// TestCompaction: compacting etcd's history (and defragmenting) changes
// neither a held lease's term nor its renewals, and the next leader's term
// is still higher. A deletion missed by a push watch whose revision was
// compacted meanwhile (its client cut off, then back) still wakes the
// subscriber: the watch is opened again and wakes everyone.
func TestCompaction(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	e := electionName(t)
	cs := twoCandidates(t, e, nil, nil, c.Endpoints()...)
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)

	// Push watch on a client behind a proxy.
	p, endpoint := newProxy(t, c.Members[0].Endpoint())
	watched := newBackend(t, Options{}, endpoint)
	other := electionName(t) + "-other"
	var woken atomic.Int32
	defer watched.Subscribe(other, func() { woken.Add(1) })()
	electiontesting.WaitFor(t, leaderLimit, "the watch to be established", func() bool { return woken.Load() > 0 })

	held := newBackend(t, Options{}, c.Endpoints()...)
	hl, err := held.Acquire(ctxT(t), backendkit.AcquireRequest{Election: electionName(t) + "-held", Identity: "h", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}

	cut(p)
	// While the watch is cut off: a release it must hear of, then enough
	// writes and a compaction past its revision.
	ob := newBackend(t, Options{}, c.Endpoints()...)
	ol, err := ob.Acquire(ctxT(t), backendkit.AcquireRequest{Election: other, Identity: "x", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Release(ctxT(t), ol); err != nil {
		t.Fatal(err)
	}
	var rev int64
	for i := range 20 {
		r, err := admin.Put(ctxT(t), "compaction-filler", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	if _, err := admin.Compact(ctxT(t), rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Defragment(ctxT(t), c.Members[0].Endpoint()); err != nil {
		t.Fatal(err)
	}
	before := woken.Load()
	p.Heal()
	electiontesting.WaitFor(t, leaderLimit, "a wake-up after the cut", func() bool { return woken.Load() > before })

	// A lease acquired before the compaction renews after it, with its
	// term.
	if got, err := held.Renew(ctxT(t), hl); err != nil || got.Term != hl.Term {
		t.Fatalf("Renew after compaction: %+v, %v; want term %d", got, err, hl.Term)
	}
	if got, err := held.Get(ctxT(t), hl.Election); err != nil || got.Term != hl.Term || got.Holder != "h" {
		t.Fatalf("Get after compaction: %+v, %v", got, err)
	}
	if err := leader.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, l2 := electiontesting.WaitNewTerm(t, cs, l.Term, leaderLimit)
	if l2.Term <= l.Term {
		t.Fatalf("term after compaction %d, want > %d", l2.Term, l.Term)
	}
}

// TestClusterLeaderFailover: with a three-member etcd cluster, the etcd
// leader is stopped under an election's leader. The cluster elects another
// etcd leader (which gives every lease its full TTL again); the election
// has exactly one leader afterwards, terms never go back, and no two
// candidates lead at once. The stopped member then rejoins.
func TestClusterLeaderFailover(t *testing.T) {
	testtier.Require(t, testtier.E2E) // a three-member etcd cluster
	c := etcdtest.Start(t, etcdtest.Options{Members: 3})
	e := electionName(t)
	rec := &electiontesting.Recorder{}
	// Longer timing than the other fault tests: an etcd election takes a
	// second or more on a loaded machine, and a leader should ride it out.
	slow := func(cfg *fxelection.Config) {
		cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, cfg.MaxBackoff = 8*time.Second, 6*time.Second, 500*time.Millisecond, 2*time.Second
	}
	cs := twoCandidates(t, e, rec, slow, c.Endpoints()...)
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)

	var etcdLeader *etcdtest.Member
	electiontesting.WaitFor(t, leaderLimit, "an etcd leader", func() bool {
		etcdLeader = c.Leader()
		return etcdLeader != nil
	})
	etcdLeader.Stop()
	electiontesting.WaitFor(t, 2*leaderLimit, "a new etcd leader", func() bool {
		m := c.Leader()
		return m != nil && m != etcdLeader
	})
	// Give the election time to renew through the new etcd leader (or to
	// hand over), then check it.
	time.Sleep(3 * time.Second)
	now, l2 := electiontesting.WaitLeader(t, cs, 2*leaderLimit)
	if now == leader && l2.Term != l.Term {
		t.Errorf("the leader's term changed from %d to %d", l.Term, l2.Term)
	}
	if now != leader && l2.Term <= l.Term {
		t.Errorf("new holder's term %d, want > %d", l2.Term, l.Term)
	}
	if _, ok := leader.Events.Find(func(ev fxelection.Event) bool { return ev.Kind == fxelection.EventStoppedLeading }); ok {
		t.Logf("the election's leader stepped down during the etcd failover (allowed; timing-dependent)")
	}
	checkNoOverlap(t, rec)

	if err := etcdLeader.Restart(); err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, Options{}, etcdLeader.Endpoint())
	electiontesting.WaitFor(t, 2*leaderLimit, "the restarted member to serve the election", func() bool {
		got, err := b.Get(ctxT(t), e)
		return err == nil && got.Term >= l.Term
	})
}

// TestEtcdDownAtAcquire: with etcd stopped, operations fail with store
// errors (not ErrLeaseHeld, ErrLeaseLost or ErrNoLease) within their
// context, and redacted.
func TestEtcdDownAtAcquire(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	b := newBackend(t, Options{}, c.Endpoints()...)
	c.Members[0].Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, backendkit.AcquireRequest{Election: "down", Identity: "a", Duration: time.Second})
	if err == nil || errors.Is(err, backendkit.ErrLeaseHeld) || errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Acquire with etcd down: %v, want a store failure", err)
	}
	if _, err := b.Get(ctx, "down"); err == nil || errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get with etcd down: %v, want a store failure", err)
	}
}
