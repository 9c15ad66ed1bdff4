package zklease

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
)

// leaderLimit bounds waits for a leader: generous, for a loaded machine
// and a session timeout (testSession) that must pass after a cut.
const leaderLimit = electiontesting.LeaderLimit + 2*testSession

// twoCandidates starts "a" and "b" on connections of their own to addr.
func twoCandidates(t *testing.T, election string, rec *electiontesting.Recorder, addr string) []*electiontesting.Candidate {
	t.Helper()
	var cs []*electiontesting.Candidate
	for _, id := range []string{"a", "b"} {
		c := electiontesting.StartCandidate(t, newBackend(t, Options{}, addr), election, id, nil)
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

// newProxy starts an electiontest.Proxy to addr for t (closed when t
// ends) and returns it.
func newProxy(t testing.TB, addr string) *electiontest.Proxy {
	t.Helper()
	p, err := electiontest.NewProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// cut cuts p's clients off as a partition that resets connections would:
// new connections are refused and current ones reset, until p.Heal.
func cut(p *electiontest.Proxy) {
	p.Refuse()
	p.Sever()
}

// TestZnodeDeletedFromOutside: an operator deletes the election's lease
// znode while a leader holds it. The leader learns it at its next renewal
// and steps down; the next leader's term is higher (a later zxid).
func TestZnodeDeletedFromOutside(t *testing.T) {
	addr := server(t)
	admin := dial(t, testSession, addr)
	e := electionName(t)
	cs := twoCandidates(t, e, nil, addr)
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)
	name, _, ok := parseVersion(l.Version)
	if !ok {
		t.Fatalf("version %q", l.Version)
	}
	if err := admin.Delete(DefaultPrefix+"/"+escapeName(e)+"/"+name, -1); err != nil {
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

// TestServerKilledAndRestarted: ZooKeeper is killed under a leader, which
// steps down at its renew deadline and reports store failures; ZooKeeper
// restarts on its data and a leader is elected again with a term no lower
// (a holder whose session and znode survived may keep its term; a new
// znode has a higher one), and no two candidates ever lead at once.
func TestServerKilledAndRestarted(t *testing.T) {
	z := testserver.NewZooKeeper(t, testserver.ZooKeeperOptions{})
	e := electionName(t)
	rec := &electiontesting.Recorder{}
	cs := twoCandidates(t, e, rec, z.Addr())
	leader, l := electiontesting.WaitLeader(t, cs, leaderLimit)

	if err := z.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := electiontesting.WaitStopped(t, leader, l.Term, leaderLimit)
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("step-down reason %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	leader.Events.WaitFor(t, leaderLimit, "a store failure event", electiontesting.IsStoreFailure)
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	next, l2 := electiontesting.WaitLeader(t, cs, 2*leaderLimit)
	switch {
	case l2.Term < l.Term:
		t.Errorf("%s leads term %d after the restart, below %d", next.Elector.Config().Identity, l2.Term, l.Term)
	case l2.Holder != l.Holder && l2.Term == l.Term:
		t.Errorf("new holder got term %d, want > %d", l2.Term, l.Term)
	}
	checkNoOverlap(t, rec)
}

// TestPartitionedLeader: the leader's connection is cut (a proxy resets
// it and refuses new ones). It steps down at its renew deadline; the other
// candidate takes over only once ZooKeeper expired the leader's session
// (and with it the lease znode), with a higher term; the two never lead
// at once. After the heal, the cut-off client has a new session: its old
// lease is lost and it follows.
func TestPartitionedLeader(t *testing.T) {
	addr := server(t)
	p := newProxy(t, addr)
	e := electionName(t)
	rec := &electiontesting.Recorder{}
	bb := newBackend(t, Options{}, p.Addr())
	behind := electiontesting.StartCandidate(t, bb, e, "behind-proxy", nil)
	behind.Elector.AddObserver(rec)
	_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{behind}, leaderLimit)
	direct := electiontesting.StartCandidate(t, newBackend(t, Options{}, addr), e, "direct", nil)
	direct.Elector.AddObserver(rec)
	electiontesting.WaitFor(t, leaderLimit, "the follower to see the leader", func() bool {
		l, ok := direct.Elector.Leader()
		return ok && l.Holder == "behind-proxy"
	})
	session := bb.conn.SessionID()

	cut(p)
	electiontesting.WaitStopped(t, behind, l.Term, leaderLimit)
	_, l2 := electiontesting.WaitNewTerm(t, []*electiontesting.Candidate{behind, direct}, l.Term, leaderLimit)
	if l2.Holder != "direct" || l2.Term <= l.Term {
		t.Fatalf("after the cut %s leads term %d, want direct with a term > %d", l2.Holder, l2.Term, l.Term)
	}
	checkNoOverlap(t, rec)

	p.Heal()
	electiontesting.WaitFor(t, leaderLimit, "a new session after the heal", func() bool {
		id := bb.conn.SessionID()
		return id != 0 && id != session
	})
	if _, err := bb.Renew(ctxT(t), l); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew of the lease of the expired session: %v, want ErrLeaseLost", err)
	}
	electiontesting.WaitFor(t, leaderLimit, "the healed candidate to follow direct", func() bool {
		cur, ok := behind.Elector.Leader()
		return ok && cur.Holder == "direct" && !behind.Elector.IsLeader()
	})
	checkNoOverlap(t, rec)
}

// TestSessionExpiredReacquire: a Backend whose session expired (its
// connection cut for longer than the session timeout) gets a new session
// from go-zookeeper; its old lease is lost (ErrLeaseLost, the znode went
// with the session) and a new Acquire gets a higher term on a znode of the
// new session.
func TestSessionExpiredReacquire(t *testing.T) {
	addr := server(t)
	p := newProxy(t, addr)
	b := newBackend(t, Options{}, p.Addr())
	e := electionName(t)
	req := backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute}
	l, err := b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	session := b.conn.SessionID()
	cut(p)
	other := newBackend(t, Options{}, addr)
	electiontesting.WaitFor(t, leaderLimit, "the session to expire (its znode deleted)", func() bool {
		_, err := other.Get(ctxT(t), e)
		return errors.Is(err, backendkit.ErrNoLease)
	})
	p.Heal()
	electiontesting.WaitFor(t, leaderLimit, "a new session", func() bool {
		id := b.conn.SessionID()
		return id != 0 && id != session && b.conn.State() == zk.StateHasSession
	})
	if _, err := b.Renew(ctxT(t), l); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew after the session expired: %v, want ErrLeaseLost", err)
	}
	l2, err := b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Term <= l.Term {
		t.Fatalf("term after the session expired %d, want > %d", l2.Term, l.Term)
	}
	if _, err := b.Renew(ctxT(t), l2); err != nil {
		t.Fatalf("Renew on the new session: %v", err)
	}
}

// TestHolderSideExpiry: a lease nobody renews ends after its Duration by
// its holder's clock although the holder's session lives: the Backend
// deletes its znode, Renew reports ErrLeaseLost and another candidate
// acquires with a higher term, never before the Duration.
func TestHolderSideExpiry(t *testing.T) {
	addr := server(t)
	a, b := newBackend(t, Options{}, addr), newBackend(t, Options{}, addr)
	e := electionName(t)
	const d = 700 * time.Millisecond
	start := time.Now()
	la, err := a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	var lb fxelection.Lease
	electiontesting.WaitFor(t, leaderLimit, "b to acquire", func() bool {
		lb, err = b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute})
		return err == nil
	})
	if took := time.Since(start); took < d {
		t.Fatalf("b acquired after %v, before the duration %v", took, d)
	}
	if lb.Term <= la.Term {
		t.Fatalf("term %d, want > %d", lb.Term, la.Term)
	}
	if _, err := a.Renew(ctxT(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew after expiry: %v, want ErrLeaseLost", err)
	}
}

// TestPushWakesOnRelease: a subscriber is woken when another Backend
// releases the lease (child watch), and not called after cancel.
func TestPushWakesOnRelease(t *testing.T) {
	addr := server(t)
	a, f := newBackend(t, Options{}, addr), newBackend(t, Options{}, addr)
	e := electionName(t)
	l, err := a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var woken atomic.Int32
	cancel := f.Subscribe(e, func() { woken.Add(1) })
	// The watch is set asynchronously: release until a wake-up comes.
	electiontesting.WaitFor(t, leaderLimit, "a wake-up on release", func() bool {
		if err := a.Release(ctxT(t), l); err != nil {
			t.Fatal(err)
		}
		if woken.Load() > 0 {
			return true
		}
		time.Sleep(100 * time.Millisecond)
		if woken.Load() > 0 {
			return true
		}
		if l, err = a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute}); err != nil {
			t.Fatal(err)
		}
		return false
	})
	cancel()
	n := woken.Load()
	if l, err = a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute}); err == nil {
		_ = a.Release(ctxT(t), l)
	}
	time.Sleep(200 * time.Millisecond)
	if woken.Load() != n {
		t.Fatal("woken after cancel")
	}
}

// TestDownAtAcquire: with ZooKeeper down, operations fail with store
// errors (not ErrLeaseHeld, ErrLeaseLost or ErrNoLease) within their
// context.
func TestDownAtAcquire(t *testing.T) {
	b := newBackend(t, Options{}, testserver.ClosedAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, backendkit.AcquireRequest{Election: "down", Identity: "a", Duration: time.Second})
	if !backendkit.IsStoreFailure(err) {
		t.Fatalf("Acquire with ZooKeeper down: %v, want a store failure", err)
	}
	if _, err := b.Get(ctx, "down"); !backendkit.IsStoreFailure(err) {
		t.Fatalf("Get with ZooKeeper down: %v, want a store failure", err)
	}
}

// TestRedaction: every error leaving the Backend passes RedactError with
// the secrets given to New; an elector on a Backend refused by ZooKeeper's
// ACL (digest authentication with a wrong password) reports store
// failures that show no secret.
func TestRedaction(t *testing.T) {
	const secret = "s3cr3t-PASSWORD-never-shown"
	addr := server(t)
	admin := dial(t, testSession, addr)
	if err := admin.AddAuth("digest", []byte("owner:"+secret)); err != nil {
		t.Fatal(err)
	}
	prefix := "/secure-" + escapeName(electionName(t))
	if _, err := admin.Create(prefix, nil, zk.FlagPersistent, zk.DigestACL(zk.PermAll, "owner", secret)); err != nil {
		t.Fatal(err)
	}
	conn := dial(t, testSession, addr)
	if err := conn.AddAuth("digest", []byte("owner:wrong-"+secret)); err != nil {
		t.Fatal(err)
	}
	b, err := New(conn, Options{Prefix: prefix}, backendkit.Credentials("owner", secret, "wrong-"+secret)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if got := b.Redact(errors.New("dial owner:wrong-" + secret + "@h")); strings.Contains(got.Error(), secret) {
		t.Fatalf("redact left the secret: %v", got)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !backendkit.IsStoreFailure(err) || strings.Contains(err.Error(), secret) {
			t.Fatalf("%s: %v, want a redacted store failure", what, err)
		}
	}
	_, err = b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "x", Identity: "a", Duration: time.Second})
	check("Acquire", err)
	if !errors.Is(err, zk.ErrNoAuth) && !strings.Contains(err.Error(), "not authenticated") {
		t.Fatalf("Acquire: %v, want a refusal by the ACL", err)
	}
	electiontesting.CheckElectorErrors(t, b, "x", check, func(log string) bool { return strings.Contains(log, secret) })
}

// TestSweepUnknownLease: a lease znode of the Backend's own session that it
// does not know of (a create whose reply was lost when the connection
// broke) is deleted by the sweep armed for the failed attempt, once the
// attempt's Duration has passed; a known lease is left alone.
func TestSweepUnknownLease(t *testing.T) {
	addr := server(t)
	b := newBackend(t, Options{}, addr)
	e := electionName(t)
	if err := b.ensureDir(ctxT(t), e); err != nil {
		t.Fatal(err)
	}
	data, err := encodeRecord(fxelection.Lease{Election: e, Holder: "a", Duration: time.Minute}, false)
	if err != nil {
		t.Fatal(err)
	}
	// What a multi applied without its reply would leave: this session's
	// ephemeral lease znode, unknown to the Backend.
	if _, err := b.conn.Create(b.Path(e)+"/"+leaseNodePrefix, data, flagEphemeralSequential, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	b.armSweep(e, time.Now().Add(300*time.Millisecond))
	electiontesting.WaitFor(t, leaderLimit, "the unknown lease znode to be swept", func() bool {
		_, err := b.Get(ctxT(t), e)
		return errors.Is(err, backendkit.ErrNoLease)
	})
	// A known lease survives a sweep.
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b.sweep(e)
	if got, err := b.Get(ctxT(t), e); err != nil || got.Term != l.Term {
		t.Fatalf("after a sweep: %+v, %v; want the known lease", got, err)
	}
}

// TestCloseWhileServerDown: Close returns promptly although an expiry
// deletion is waiting on a connection whose server is down, and push
// wake-up stops (no wake after Close).
func TestCloseWhileServerDown(t *testing.T) {
	z := testserver.NewZooKeeper(t, testserver.ZooKeeperOptions{})
	b := newBackend(t, Options{}, z.Addr())
	e := electionName(t)
	if _, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var woken atomic.Int32
	b.Subscribe(e, func() { woken.Add(1) })
	if err := z.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the expiry fires and waits on the connection
	done := make(chan struct{})
	go func() { _ = b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(leaderLimit):
		t.Fatal("Close did not return with the server down")
	}
	n := woken.Load()
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if woken.Load() != n {
		t.Fatal("woken after Close")
	}
}
