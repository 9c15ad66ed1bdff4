package pglease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestStaleReleaseAfterReacquire: a restarted holder (incarnation B, same
// identity, its own pool) re-acquires the lease incarnation A still holds
// and keeps the term; A's delayed Release of its own lease is then a no-op
// (the row's expires_at moved), so nobody else can take the lease B holds.
// B's Release frees it. A and B ask for different durations so their
// expiries differ however fast the statements run.
func TestStaleReleaseAfterReacquire(t *testing.T) {
	d := dsn(t)
	a, _ := newBackend(t, d, "rel-a", pglease.Options{})
	b, _ := newBackend(t, d, "rel-b", pglease.Options{})
	e := election(t)
	req := func(id string, dur time.Duration) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Duration: dur}
	}
	la, err := a.Acquire(ctxT(t), req("node", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctxT(t), req("node", 2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term != la.Term || lb.ExpiresAt.Equal(la.ExpiresAt) {
		t.Fatalf("re-acquire = term %d expiry %v; want term %d and an expiry other than %v", lb.Term, lb.ExpiresAt, la.Term, la.ExpiresAt)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatalf("stale Release: %v", err)
	}
	got, err := a.Get(ctxT(t), e)
	if err != nil || got.Holder != "node" || got.Term != lb.Term || !got.ExpiresAt.Equal(lb.ExpiresAt) {
		t.Fatalf("Get after stale Release = %+v, %v; want B's lease (term %d, expiry %v)", got, err, lb.Term, lb.ExpiresAt)
	}
	var held *backendkit.HeldError
	if _, err := a.Acquire(ctxT(t), req("other", time.Minute)); !errors.As(err, &held) || held.Holder.Term != lb.Term {
		t.Fatalf("other identity's Acquire after stale Release: %v, want a HeldError naming term %d", err, lb.Term)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after B's Release = %+v, %v; want ErrNoLease", got, err)
	}
	if l, err := a.Acquire(ctxT(t), req("other", time.Minute)); err != nil || l.Term <= lb.Term {
		t.Fatalf("Acquire after B's Release = %+v, %v; want a term above %d", l, err, lb.Term)
	}
}

// TestReleaseAfterUnseenRenewal: a Release carrying the lease from before a
// renewal whose result the releaser never saw (the statement ran, the reply
// was lost) frees nothing; the lease stays held (it would run out at its
// expiry). The lease the renewal returned releases it.
func TestReleaseAfterUnseenRenewal(t *testing.T) {
	d := dsn(t)
	b, _ := newBackend(t, d, "rel-renew", pglease.Options{})
	e := election(t)
	l0, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	longer := l0.Clone()
	longer.Duration = 2 * time.Minute // a later expiry, however fast the renewal runs
	l1, err := b.Renew(ctxT(t), longer)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctxT(t), l0); err != nil {
		t.Fatalf("stale Release: %v", err)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Holder != "node" || !got.ExpiresAt.Equal(l1.ExpiresAt) {
		t.Fatalf("Get after stale Release = %+v, %v; want the renewed lease (expiry %v)", got, err, l1.ExpiresAt)
	}
	if err := b.Release(ctxT(t), l1); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
	}
}

// TestReleaseMatchesReturnedExpiry: every lease the backend hands out
// (Acquire, re-acquire, Renew, RenewBatch) releases the row: the expiry
// it carries is the row's, to the microsecond, whatever time zone the
// caller converts it to. A hand-made lease without ExpiresAt is released
// on holder and term alone.
func TestReleaseMatchesReturnedExpiry(t *testing.T) {
	d := dsn(t)
	b, _ := newBackend(t, d, "rel-match", pglease.Options{})
	zone := time.FixedZone("UTC+5:30", 5*3600+30*60)
	ops := map[string]func(t *testing.T, e string) fxelection.Lease{
		"acquire": func(t *testing.T, e string) fxelection.Lease { return acquireT(t, b, e) },
		"re-acquire": func(t *testing.T, e string) fxelection.Lease {
			acquireT(t, b, e)
			return acquireT(t, b, e)
		},
		"renew": func(t *testing.T, e string) fxelection.Lease {
			l, err := b.Renew(ctxT(t), acquireT(t, b, e))
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		"renew batch": func(t *testing.T, e string) fxelection.Lease {
			res := b.RenewBatch(ctxT(t), []fxelection.Lease{acquireT(t, b, e)})
			if res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			return res[0].Lease
		},
		"other zone": func(t *testing.T, e string) fxelection.Lease {
			l := acquireT(t, b, e)
			l.ExpiresAt = l.ExpiresAt.In(zone)
			return l
		},
		"no expiry": func(t *testing.T, e string) fxelection.Lease {
			l := acquireT(t, b, e)
			return fxelection.Lease{Election: e, Holder: l.Holder, Term: l.Term}
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			e := election(t)
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

func acquireT(t *testing.T, b *pglease.Backend, e string) fxelection.Lease {
	t.Helper()
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
