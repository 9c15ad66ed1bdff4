package redislease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
)

func twoCandidates(t *testing.T, addr, election string) []*electiontest.Candidate {
	return []*electiontest.Candidate{
		electiontest.StartCandidate(t, newBackend(t, addr, Options{}), election, "c1", nil),
		electiontest.StartCandidate(t, newBackend(t, addr, Options{}), election, "c2", nil),
	}
}

// TestLeaseDeletedFromOutside: DEL of the lease key. The leader learns it
// at its next renewal (lease lost) and steps down; a leader is elected again
// with a higher term.
func TestLeaseDeletedFromOutside(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	e := electionName(t)
	cs := twoCandidates(t, srv.Addr(), e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	lease, _ := mustNew(t, admin, Options{}).Keys(e)
	if err := admin.Del(ctxT(t), lease).Err(); err != nil {
		t.Fatal(err)
	}
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, electiontest.LeaderLimit)
	t.Logf("term %d → %d after DEL", first.Term, second.Term)
}

// TestFlushAll: FLUSHALL drops the lease and the term counter. The leader
// steps down at its next renewal; the next leader's term is still higher,
// because terms are clock-based by default.
func TestFlushAll(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	e := electionName(t)
	cs := twoCandidates(t, srv.Addr(), e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	if err := admin.FlushAll(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if ev.Reason != fxelection.ReasonLost {
		t.Fatalf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonLost)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, electiontest.LeaderLimit)
	t.Logf("term %d → %d after FLUSHALL", first.Term, second.Term)
}

// TestServerKilled: redis-server killed mid-leadership. The leader steps
// down within RenewDeadline (its renewals fail); after a restart (without
// persistence) a leader is elected again with a higher term.
func TestServerKilled(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	e := electionName(t)
	cs := twoCandidates(t, srv.Addr(), e)
	leader, first := electiontest.WaitLeader(t, cs, electiontest.LeaderLimit)
	killed := time.Now()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := electiontest.WaitStopped(t, leader, first.Term, electiontest.FaultRenew+5*time.Second)
	if took := ev.Time.Sub(killed); took > electiontest.FaultRenew+2*time.Second {
		t.Errorf("stepped down %v after the kill, want within RenewDeadline %v (+2s slack)", took, electiontest.FaultRenew)
	}
	if ev.Reason != fxelection.ReasonDeadline {
		t.Errorf("stopped leading because %q, want %q", ev.Reason, fxelection.ReasonDeadline)
	}
	if _, ok := leader.Events.Find(func(ev fxelection.Event) bool {
		return electiontest.IsStoreFailure(ev) && ev.Op == fxelection.OpRenew
	}); !ok {
		t.Error("no failed renewal was observed")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	_, second := electiontest.WaitNewTerm(t, cs, first.Term, electiontest.LeaderLimit)
	t.Logf("stepped down %v after the kill; term %d → %d after restart", ev.Time.Sub(killed), first.Term, second.Term)
}

// TestServerDownAtStart: candidates start while redis-server is down. They
// report store failures (events and OnError) and back off exponentially;
// once the server is up a leader is elected.
func TestServerDownAtStart(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	e := electionName(t)
	var mu sync.Mutex
	var opErrs []*fxelection.OpError
	onError := func(err error) {
		var oe *fxelection.OpError
		if errors.As(err, &oe) {
			mu.Lock()
			opErrs = append(opErrs, oe)
			mu.Unlock()
		}
	}
	c := electiontest.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "c1", func(cfg *fxelection.Config) {
		cfg.Callbacks.OnError = onError
	})
	failures := func() []fxelection.Event {
		var out []fxelection.Event
		for _, ev := range c.Events.All() {
			if electiontest.IsStoreFailure(ev) && ev.Op == fxelection.OpAcquire {
				out = append(out, ev)
			}
		}
		return out
	}
	electiontest.WaitFor(t, 30*time.Second, "four failed acquisitions", func() bool { return len(failures()) >= 4 })
	fs := failures()
	// Lower bounds only: waits never end early. Failure n is followed by
	// RetryPeriod·2^(n−1), capped at MaxBackoff, plus jitter.
	for i := 1; i < len(fs); i++ {
		want := min(electiontest.FaultRetry<<(i-1), electiontest.FaultMaxBackoff)
		if gap := fs[i].Time.Sub(fs[i-1].Time); gap < want {
			t.Errorf("gap after failure %d = %v, want at least %v (backoff)", i, gap, want)
		}
	}
	electiontest.WaitFor(t, 10*time.Second, "OnError calls", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(opErrs) > 0
	})
	mu.Lock()
	if oe := opErrs[0]; oe.Op != fxelection.OpAcquire || oe.Election != e {
		t.Errorf("OnError got %v", oe)
	}
	mu.Unlock()
	if c.Elector.Status().LastError == nil {
		t.Error("Status has no LastError")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	electiontest.WaitLeader(t, []*electiontest.Candidate{c}, electiontest.FaultMaxBackoff*2+electiontest.LeaderLimit)
}

// TestReacquireAfterCrash: a leader dies without releasing (its lease stays
// in Redis); the same identity, restarted with a new client, leads again at
// its first attempt with the same term, while another candidate waits.
func TestReacquireAfterCrash(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	e := electionName(t)
	keep := func(cfg *fxelection.Config) {
		cfg.KeepLeaseOnStop = true // what a crash leaves behind
		cfg.LeaseDuration, cfg.RenewDeadline = time.Minute, 40*time.Second
	}
	a := electiontest.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "fixed", keep)
	_, first := electiontest.WaitLeader(t, []*electiontest.Candidate{a}, electiontest.LeaderLimit)
	other := electiontest.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "other", keep)
	electiontest.WaitFor(t, electiontest.LeaderLimit, "the other candidate to see the leader", func() bool {
		l, ok := other.Elector.Leader()
		return ok && l.Holder == "fixed"
	})
	if err := a.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted := electiontest.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "fixed", keep)
	_, again := electiontest.WaitLeader(t, []*electiontest.Candidate{restarted, other}, 10*time.Second)
	if again.Holder != "fixed" || again.Term != first.Term {
		t.Fatalf("after restart %q leads with term %d, want fixed with term %d", again.Holder, again.Term, first.Term)
	}
	op, _ := restarted.Events.Find(func(ev fxelection.Event) bool { return ev.Kind == fxelection.EventOperation })
	if op.Op != fxelection.OpAcquire || op.Err != nil {
		t.Fatalf("first operation after restart: %s, %v; want a successful acquire", op.Op, op.Err)
	}
}

// TestPushWakesFollower: with a retry period far longer than the test's
// bound, a follower takes over a released lease only thanks to push.
func TestPushWakesFollower(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	electiontest.CheckPushHandover(t, newBackend(t, srv.Addr(), Options{}), newBackend(t, srv.Addr(), Options{}), electiontest.PushOptions{})
}
