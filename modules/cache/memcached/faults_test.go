package memcachedlease

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestFaults runs the shared fault scenarios against a real memcached:
// killed and restarted (memcached always restarts empty), flush_all, the
// key deleted, a foreign value (expiring by memcached's TTL), down at start.
func TestFaults(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	admin := newClient(t, srv.Addr())
	keys := newBackend(t, srv.Addr(), cachelease.Options{})
	storetest.RunFaultTests(t, storetest.FaultHooks{
		NewBackend: func(t *testing.T) fxelection.Backend { return newBackend(t, srv.Addr(), cachelease.Options{}) },
		Server:     srv,
		Flush: func(t *testing.T) {
			if err := admin.FlushAll(); err != nil {
				t.Fatal(err)
			}
		},
		Delete: func(t *testing.T, election string) {
			if err := admin.Delete(keys.Key(election)); err != nil {
				t.Fatal(err)
			}
		},
		PutForeign: func(t *testing.T, election string, ttl time.Duration) {
			if err := admin.Set(&memcache.Item{Key: keys.Key(election), Value: []byte("foreign"), Expiration: int32(ttl/time.Second) + 1}); err != nil { // +1: never early

				t.Fatal(err)
			}
		},
		ForeignExpires: true,
		Slack:          2 * time.Second, // whole-second TTL rounding
	})
}

// TestEviction fills a small memcached until it evicts a lease that is not
// being renewed: the holder's renewal then fails with ErrLeaseLost, Get
// reports no lease, and the next holder's term is higher than the evicted
// one (clock-seeded), as the guarantees table promises. A released marker
// evicted the same way loses nothing either.
func TestEviction(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{MemoryMB: 2})
	filler := newClient(t, srv.Addr())
	a := newBackend(t, srv.Addr(), cachelease.Options{})
	b := newBackend(t, srv.Addr(), cachelease.Options{})
	e, released := electionName(t), electionName(t)+"-released"
	req := func(election, id string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: election, Identity: id, Duration: time.Hour}
	}
	held, err := a.Acquire(ctxT(t), req(e, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := a.Acquire(ctxT(t), req(released, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctxT(t), rel); err != nil {
		t.Fatal(err)
	}
	// Fill with values of the lease value's size (the same slab class)
	// until both keys are gone.
	it, err := filler.Get(a.Key(e))
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(strings.Repeat("x", len(it.Value)))
	evicted := func(key string) bool {
		_, err := filler.Get(key)
		return errors.Is(err, memcache.ErrCacheMiss)
	}
	n := 0
	for round := 0; !(evicted(a.Key(e)) && evicted(a.Key(released))); round++ {
		if round == 20 {
			t.Fatalf("lease not evicted after %d fills of a 2 MB cache", n)
		}
		for range 20000 {
			if err := filler.Set(&memcache.Item{Key: fmt.Sprintf("fill-%d", n), Value: value}); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	t.Logf("evicted after %d fills", n)
	if _, err := a.Renew(ctxT(t), held); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew of an evicted lease: %v, want ErrLeaseLost", err)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get of an evicted lease: %v, want ErrNoLease", err)
	}
	for _, c := range []struct {
		election string
		old      uint64
	}{{e, held.Term}, {released, rel.Term}} {
		l, err := b.Acquire(ctxT(t), req(c.election, "b"))
		if err != nil {
			t.Fatal(err)
		}
		if l.Term <= c.old {
			t.Fatalf("term after eviction %d, want > %d", l.Term, c.old)
		}
	}
}

// TestDurationsMemcachedCannotExpress: lease durations beyond memcached's
// relative expiration are refused before anything is written; sub-second
// ones are rounded up, never down.
func TestDurationsMemcachedCannotExpress(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int32
	}{{0, 0}, {time.Nanosecond, 2}, {500 * time.Millisecond, 2}, {time.Second, 2}, {1001 * time.Millisecond, 3}, {15 * time.Second, 16}, {MaxLease, maxExpiration}} {
		got, err := Expiration(c.d)
		if err != nil || got != c.want {
			t.Errorf("Expiration(%v) = %d, %v; want %d", c.d, got, err, c.want)
		}
	}
	for _, d := range []time.Duration{-time.Second, MaxLease + time.Nanosecond, 31 * 24 * time.Hour} {
		if _, err := Expiration(d); !errors.Is(err, cachelease.ErrTTLRange) {
			t.Errorf("Expiration(%v) = %v, want ErrTTLRange", d, err)
		}
	}
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	b := newBackend(t, srv.Addr(), cachelease.Options{})
	e := electionName(t)
	_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 31 * 24 * time.Hour})
	if !errors.Is(err, cachelease.ErrTTLRange) {
		t.Fatalf("Acquire with a 31-day lease: %v, want ErrTTLRange", err)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("a refused Acquire wrote something: %v", err)
	}
}

// TestHostileElectionNames: names with spaces, CR LF (memcached's command
// separator), dots, '=' and long multi-byte names each get their own valid
// key; a name with control characters is refused before any I/O, so it
// cannot inject a command.
func TestHostileElectionNames(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	a := newBackend(t, srv.Addr(), cachelease.Options{})
	b := newBackend(t, srv.Addr(), cachelease.Options{})
	if _, err := a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "a\r\nflush_all", Identity: "a", Duration: time.Minute}); err == nil {
		t.Fatalf("Acquire with CR LF in the name: %v, want refused", err)
	}
	names := []string{"a b", "a=41", "aA", "a.b", strings.Repeat("é", 100), strings.Repeat("é", 99) + "e"}
	electiontest.CheckElectionNames(t, a, b, names)
}
