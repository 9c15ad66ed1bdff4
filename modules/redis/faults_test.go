package redislease

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestFaults runs electiontest's fault scenarios against a redis-server of
// its own: DEL of the lease key and FLUSHALL (the leader learns it at its
// next renewal; the next term is higher, terms being clock-based by
// default), the server killed and restarted (without persistence, so
// empty) and down at start.
func TestFaults(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	storetest.RunFaultTests(t, storetest.FaultHooks{
		NewBackend: func(t *testing.T) fxelection.Backend { return newBackend(t, srv.Addr(), Options{}) },
		Server:     srv,
		Flush: func(t *testing.T) {
			if err := admin.FlushAll(ctxT(t)).Err(); err != nil {
				t.Fatal(err)
			}
		},
		Delete: func(t *testing.T, election string) {
			lease, _ := mustNew(t, admin, Options{}).Keys(election)
			if err := admin.Del(ctxT(t), lease).Err(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestReacquireAfterCrash: a leader dies without releasing (its lease stays
// in Redis); the same identity, restarted with a new client, leads again at
// its first attempt, while another candidate waits. The restart is a new
// incarnation, so it leads with a strictly higher term (the crashed run
// might only have been paused).
func TestReacquireAfterCrash(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	e := electionName(t)
	keep := func(cfg *fxelection.Config) {
		cfg.KeepLeaseOnStop = true // what a crash leaves behind
		cfg.LeaseDuration, cfg.RenewDeadline = time.Minute, 40*time.Second
	}
	a := electiontesting.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "fixed", keep)
	_, first := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a}, electiontesting.LeaderLimit)
	other := electiontesting.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "other", keep)
	electiontesting.WaitFor(t, electiontesting.LeaderLimit, "the other candidate to see the leader", func() bool {
		l, ok := other.Elector.Leader()
		return ok && l.Holder == "fixed"
	})
	if err := a.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted := electiontesting.StartCandidate(t, newBackend(t, srv.Addr(), Options{}), e, "fixed", keep)
	_, again := electiontesting.WaitLeader(t, []*electiontesting.Candidate{restarted, other}, 10*time.Second)
	if again.Holder != "fixed" || again.Term <= first.Term {
		t.Fatalf("after restart %q leads with term %d, want fixed with a term above %d", again.Holder, again.Term, first.Term)
	}
	op, _ := restarted.Events.Find(func(ev fxelection.Event) bool { return ev.Kind == fxelection.EventOperation })
	if op.Op != backendkit.OpAcquire || op.Err != nil {
		t.Fatalf("first operation after restart: %s, %v; want a successful acquire", op.Op, op.Err)
	}
}

// TestPushWakesFollower: with a retry period far longer than the test's
// bound, a follower takes over a released lease only thanks to push.
func TestPushWakesFollower(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	storetest.CheckPushHandover(t, newBackend(t, srv.Addr(), Options{}), newBackend(t, srv.Addr(), Options{}), storetest.PushOptions{})
}
