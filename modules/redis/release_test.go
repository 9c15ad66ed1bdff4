package redislease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestStaleReleaseAfterReacquire: a restarted holder (incarnation B, same
// identity, its own client) re-acquires the lease incarnation A still holds
// without naming an incarnation (as the Elector's hand-over hint does; one
// that names one gets a new term, see incarnation_test.go) and keeps the
// term; A's delayed Release of its own lease is then a no-op
// (the record's acquisition nonce changed), so nobody else can take the
// lease B holds. B's Release frees it. Same duration and metadata for both:
// the nonce alone tells the acquisitions apart.
func TestStaleReleaseAfterReacquire(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	a := newBackend(t, srv.Addr(), Options{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	req := func(id string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute, Metadata: map[string]string{"k": "v"}}
	}
	la, err := a.Acquire(ctxT(t), req("node"))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctxT(t), req("node"))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term != la.Term {
		t.Fatalf("re-acquire = term %d, want %d", lb.Term, la.Term)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatalf("stale Release: %v", err)
	}
	got, err := a.Get(ctxT(t), e)
	if err != nil || got.Holder != "node" || got.Term != lb.Term {
		t.Fatalf("Get after stale Release = %+v, %v; want B's lease (term %d)", got, err, lb.Term)
	}
	var held *backendkit.HeldError
	if _, err := a.Acquire(ctxT(t), req("other")); !errors.As(err, &held) || held.Holder.Term != lb.Term {
		t.Fatalf("other identity's Acquire after stale Release: %v, want a HeldError naming term %d", err, lb.Term)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after B's Release = %+v, %v; want ErrNoLease", got, err)
	}
	if l, err := a.Acquire(ctxT(t), req("other")); err != nil || l.Term <= lb.Term {
		t.Fatalf("Acquire after B's Release = %+v, %v; want a term above %d", l, err, lb.Term)
	}
	// Releasing a lease that is gone (taken by another) is not an error and
	// frees nothing.
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatalf("Release of a lost lease: %v", err)
	}
	if got, err := a.Get(ctxT(t), e); err != nil || got.Holder != "other" {
		t.Fatalf("Get after releasing a lost lease = %+v, %v; want other's lease", got, err)
	}
}

// TestStaleAcquireThenRenew: an earlier incarnation's delayed Acquire that
// lands after the restarted holder's re-acquisition changes the record's
// nonce; the holder's next Renew returns the record's current nonce, so its
// own Release still frees the lease (as on Postgres, where every renewal
// returns the row's expiry).
func TestStaleAcquireThenRenew(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	a := newBackend(t, srv.Addr(), Options{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	req := backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute}
	lb, err := b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(ctxT(t), req) // the stale one, whose reply nobody reads
	if err != nil {
		t.Fatal(err)
	}
	if la.Version == lb.Version {
		t.Fatalf("two acquisitions share the nonce %q", la.Version)
	}
	for name, renew := range map[string]func(fxelection.Lease) (fxelection.Lease, error){
		"Renew": func(l fxelection.Lease) (fxelection.Lease, error) { return b.Renew(ctxT(t), l) },
		"RenewBatch": func(l fxelection.Lease) (fxelection.Lease, error) {
			r := b.RenewBatch(ctxT(t), []fxelection.Lease{l})
			return r[0].Lease, r[0].Err
		},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := renew(lb)
			if err != nil {
				t.Fatal(err)
			}
			if l.Version != la.Version {
				t.Fatalf("renewed lease's nonce = %q, want the record's %q", l.Version, la.Version)
			}
		})
	}
	if err := b.Release(ctxT(t), lb); err != nil { // before the renewal: stale
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), e); err != nil {
		t.Fatalf("Get after a Release with the superseded nonce: %v; want the lease still held", err)
	}
	l, err := b.Renew(ctxT(t), lb)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
	}
}

// TestReleaseMatchesReturnedNonce: every lease the backend hands out
// (Acquire, re-acquire, Renew with the same or a new duration, RenewBatch,
// Get) releases the record. A hand-made lease without Version is released
// on holder and term alone.
func TestReleaseMatchesReturnedNonce(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	acquire := func(t *testing.T, e string) fxelection.Lease {
		t.Helper()
		l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Version) != nonceLen {
			t.Fatalf("acquired lease's Version = %q, want a %d-character nonce", l.Version, nonceLen)
		}
		return l
	}
	renew := func(t *testing.T, l fxelection.Lease) fxelection.Lease {
		t.Helper()
		l, err := b.Renew(ctxT(t), l)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ops := map[string]func(t *testing.T, e string) fxelection.Lease{
		"acquire": acquire,
		"re-acquire": func(t *testing.T, e string) fxelection.Lease {
			acquire(t, e)
			return acquire(t, e)
		},
		"renew": func(t *testing.T, e string) fxelection.Lease { return renew(t, acquire(t, e)) },
		"renew new duration": func(t *testing.T, e string) fxelection.Lease {
			l := acquire(t, e)
			l.Duration = 2 * time.Minute
			return renew(t, l)
		},
		"renew batch": func(t *testing.T, e string) fxelection.Lease {
			res := b.RenewBatch(ctxT(t), []fxelection.Lease{acquire(t, e)})
			if res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			return res[0].Lease
		},
		"get": func(t *testing.T, e string) fxelection.Lease {
			l := acquire(t, e)
			got, err := b.Get(ctxT(t), e)
			if err != nil || got.Version != l.Version {
				t.Fatalf("Get = %+v, %v; want Version %q", got, err, l.Version)
			}
			return got
		},
		"no version": func(t *testing.T, e string) fxelection.Lease {
			l := acquire(t, e)
			return fxelection.Lease{Election: e, Holder: l.Holder, Term: l.Term}
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			e := electionName(t)
			l := op(t, e)
			if err := b.Release(ctxT(t), l); err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
				t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
			}
		})
	}
}
