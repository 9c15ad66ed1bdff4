package redislease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/testserver"
)

func acquire(t *testing.T, b *Backend, e, id string) fxelection.Lease {
	t.Helper()
	l, err := b.Acquire(ctxT(t), fxelection.AcquireRequest{Election: e, Identity: id, Duration: time.Minute})
	if err != nil {
		t.Fatalf("Acquire(%s as %s): %v", e, id, err)
	}
	return l
}

func release(t *testing.T, b *Backend, l fxelection.Lease) {
	t.Helper()
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// TestTermsAfterDataLoss documents when terms survive the loss of the
// counter: clock-based terms (the default) keep increasing after FLUSHALL
// and after a restart without persistence; sequential terms start again at
// 1; with appendonly yes both survive a kill.
func TestTermsAfterDataLoss(t *testing.T) {
	t.Run("ClockFlushAll", func(t *testing.T) {
		srv := newServer(t, testserver.RedisOptions{})
		b := newBackend(t, srv.Addr(), Options{})
		e := electionName(t)
		l1 := acquire(t, b, e, "a")
		release(t, b, l1)
		l2 := acquire(t, b, e, "b")
		if err := b.client.FlushAll(ctxT(t)).Err(); err != nil {
			t.Fatal(err)
		}
		l3 := acquire(t, b, e, "c")
		if !(l1.Term < l2.Term && l2.Term < l3.Term) {
			t.Fatalf("terms %d, %d, then %d after FLUSHALL: not increasing", l1.Term, l2.Term, l3.Term)
		}
	})
	t.Run("ClockRestartWithoutPersistence", func(t *testing.T) {
		srv := newServer(t, testserver.RedisOptions{})
		b := newBackend(t, srv.Addr(), Options{})
		e := electionName(t)
		l1 := acquire(t, b, e, "a")
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(ctxT(t), e); err == nil {
			t.Fatal("the lease survived a restart without persistence")
		}
		l2 := acquire(t, b, e, "b")
		if l2.Term <= l1.Term {
			t.Fatalf("term %d after restart, want > %d", l2.Term, l1.Term)
		}
	})
	t.Run("SequentialFlushAllRepeats", func(t *testing.T) {
		srv := newServer(t, testserver.RedisOptions{})
		b := newBackend(t, srv.Addr(), Options{SequentialTerms: true})
		e := electionName(t)
		l1 := acquire(t, b, e, "a")
		release(t, b, l1)
		l2 := acquire(t, b, e, "b")
		if l1.Term != 1 || l2.Term != 2 {
			t.Fatalf("sequential terms %d, %d, want 1, 2", l1.Term, l2.Term)
		}
		if err := b.client.FlushAll(ctxT(t)).Err(); err != nil {
			t.Fatal(err)
		}
		if l3 := acquire(t, b, e, "c"); l3.Term != 1 {
			t.Fatalf("sequential term after FLUSHALL = %d; the documented behaviour is 1", l3.Term)
		}
	})
	t.Run("SequentialAppendOnlySurvivesKill", func(t *testing.T) {
		srv := newServer(t, testserver.RedisOptions{AppendOnly: true})
		b := newBackend(t, srv.Addr(), Options{SequentialTerms: true})
		e := electionName(t)
		l1 := acquire(t, b, e, "a")
		release(t, b, l1)
		l2 := acquire(t, b, e, "b")
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		// The lease itself survived too (PX expiry is absolute in the AOF).
		got, err := b.Get(ctxT(t), e)
		if err != nil || got.Holder != "b" || got.Term != l2.Term {
			t.Fatalf("after restart Get = %+v, %v; want b's lease", got, err)
		}
		release(t, b, l2)
		if l3 := acquire(t, b, e, "c"); l3.Term != l2.Term+1 {
			t.Fatalf("term after kill and restart with appendonly = %d, want %d", l3.Term, l2.Term+1)
		}
	})
	t.Run("SequentialContinuesClockCounter", func(t *testing.T) {
		srv := newServer(t, testserver.RedisOptions{})
		clock := newBackend(t, srv.Addr(), Options{})
		seq := newBackend(t, srv.Addr(), Options{SequentialTerms: true})
		e := electionName(t)
		l1 := acquire(t, clock, e, "a")
		release(t, clock, l1)
		if l2 := acquire(t, seq, e, "b"); l2.Term != l1.Term+1 {
			t.Fatalf("sequential after clock term %d: %d, want %d", l1.Term, l2.Term, l1.Term+1)
		}
	})
}
