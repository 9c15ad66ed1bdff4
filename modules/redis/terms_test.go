package redislease

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

func acquire(t *testing.T, b *Backend, e, id string) fxelection.Lease {
	t.Helper()
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute})
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
// counter: they keep increasing after FLUSHALL and after a restart without
// persistence (they take the server's clock into account); with appendonly
// yes the counter and the lease survive a kill.
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
	t.Run("AppendOnlySurvivesKill", func(t *testing.T) {
		srv := newServer(t, testserver.RedisOptions{AppendOnly: true})
		b := newBackend(t, srv.Addr(), Options{})
		// The default appendfsync everysec may lose the last second of
		// writes to a kill; the documented setting for fencing is always.
		if err := b.client.ConfigSet(ctxT(t), "appendfsync", "always").Err(); err != nil {
			t.Fatal(err)
		}
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
		// So did the counter.
		_, termKey := b.Keys(e)
		if c := b.client.Get(ctxT(t), termKey).Val(); c != strconv.FormatUint(l2.Term, 10) {
			t.Fatalf("counter after kill and restart with appendonly = %q, want %d", c, l2.Term)
		}
		release(t, b, l2)
		if l3 := acquire(t, b, e, "c"); l3.Term <= l2.Term {
			t.Fatalf("term after kill and restart with appendonly = %d, want > %d", l3.Term, l2.Term)
		}
	})
}

// TestTermsExact: terms above 2^53 (where Lua's numbers, doubles, stop
// being exact) and up to backendkit.MaxTerm are handed out exactly; at MaxTerm Acquire refuses with ErrTermExhausted and leaves
// the counter as it was, rather than wrap or round.
func TestTermsExact(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	for _, mode := range []struct {
		name string
		opts Options
	}{{"Clock", Options{}}} {
		t.Run(mode.name, func(t *testing.T) {
			b := newBackend(t, srv.Addr(), mode.opts)
			for _, start := range []uint64{1 << 53, 1<<53 + 1, 1<<62 + 12345, math.MaxInt64 - 3} {
				e := electionName(t)
				_, term := b.Keys(e)
				if err := admin.Set(ctxT(t), term, strconv.FormatUint(start, 10), 0).Err(); err != nil {
					t.Fatal(err)
				}
				for i := uint64(1); i <= 2; i++ {
					l := acquire(t, b, e, "a")
					if l.Term != start+i {
						t.Fatalf("counter %d: term %d, want exactly %d", start, l.Term, start+i)
					}
					if got, _ := b.Get(ctxT(t), e); got.Term != l.Term {
						t.Fatalf("Get term %d, want %d", got.Term, l.Term)
					}
					if c := admin.Get(ctxT(t), term).Val(); c != strconv.FormatUint(l.Term, 10) {
						t.Fatalf("counter %s after term %d", c, l.Term)
					}
					// Renew and Release compare the term exactly too.
					if _, err := b.Renew(ctxT(t), l); err != nil {
						t.Fatalf("Renew at term %d: %v", l.Term, err)
					}
					wrong := l
					wrong.Term--
					if _, err := b.Renew(ctxT(t), wrong); !errors.Is(err, backendkit.ErrLeaseLost) {
						t.Fatalf("Renew with term %d under %d: %v", wrong.Term, l.Term, err)
					}
					release(t, b, l)
				}
			}
			// The top of the range: MaxTerm is handed out, then refused.
			e := electionName(t)
			lease, term := b.Keys(e)
			if err := admin.Set(ctxT(t), term, strconv.FormatUint(math.MaxInt64-1, 10), 0).Err(); err != nil {
				t.Fatal(err)
			}
			l := acquire(t, b, e, "a")
			if l.Term != math.MaxInt64 {
				t.Fatalf("term %d, want MaxTerm", l.Term)
			}
			l2 := acquire(t, b, e, "a")
			if l2.Term != math.MaxInt64 {
				t.Fatalf("re-acquire at MaxTerm: term %d", l2.Term)
			}
			release(t, b, l2) // the re-acquisition's lease: l's release is stale now
			for _, id := range []string{"a", "b"} {
				_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute})
				if !errors.Is(err, backendkit.ErrTermExhausted) {
					t.Fatalf("Acquire after MaxTerm: %v, want ErrTermExhausted", err)
				}
			}
			if n := admin.Exists(ctxT(t), lease).Val(); n != 0 {
				t.Fatal("a lease was written after MaxTerm")
			}
			if c := admin.Get(ctxT(t), term).Val(); c != strconv.FormatUint(math.MaxInt64, 10) {
				t.Fatalf("counter after the refusal = %s", c)
			}
		})
	}
}

// TestTermAfterDelete: deleting the lease and the term counter (an
// operator's DEL) while a leader holds the lease does not let terms repeat:
// the next holder's term is above thousands of earlier ones.
func TestTermAfterDelete(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	for _, tc := range []struct {
		name string
		opts Options
	}{{"Clock", Options{}}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, srv.Addr(), tc.opts)
			e := electionName(t)
			lease, term := b.Keys(e)
			var highest uint64
			for range 2000 {
				l := acquire(t, b, e, "a")
				highest = max(highest, l.Term)
				release(t, b, l)
			}
			l := acquire(t, b, e, "a")
			highest = max(highest, l.Term)
			if err := admin.Del(ctxT(t), lease, term).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Renew(ctxT(t), l); !errors.Is(err, backendkit.ErrLeaseLost) {
				t.Fatalf("Renew after DEL: %v", err)
			}
			next := acquire(t, b, e, "b")
			if next.Term <= highest {
				t.Fatalf("term after DEL = %d, want > %d", next.Term, highest)
			}
		})
	}
}
