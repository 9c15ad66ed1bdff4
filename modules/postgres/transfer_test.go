package pglease_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestTransferMatchesAsRelease: Transfer matches the caller's lease as
// Release does. The lease from before a renewal (a stale expiry), an
// expired one, and a request for another election transfer nothing and
// leave the row as it was; the lease as last written transfers in one
// statement: the successor's record with its metadata and incarnation, a
// term above the old one, expiring Duration after it was written, and a
// NOTIFY that wakes another Backend's subscriber.
func TestTransferMatchesAsRelease(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	a, _ := newBackend(t, d, "xfer-a", pglease.Options{})
	follower, app := newBackend(t, d, "xfer-f", pglease.Options{})
	e := election(t)
	var woken atomic.Int64
	cancel := follower.Subscribe(e, func() { woken.Add(1) })
	defer cancel()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listener", func() bool { return listeners(t, adm, app) == 1 })
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up after LISTEN", func() bool { return woken.Load() == 1 })
	woken.Store(0)

	l0, err := a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	longer := l0.Clone()
	longer.Duration = 2 * time.Minute // a later expiry, however fast the renewal runs
	l1, err := a.Renew(ctxT(t), longer)
	if err != nil {
		t.Fatal(err)
	}
	inc := backendkit.NewIncarnation()
	req := backendkit.AcquireRequest{Election: e, Identity: "b", Duration: 90 * time.Second,
		Incarnation: inc, Metadata: map[string]string{"from": "a"}}
	unchanged := func(what string) {
		t.Helper()
		got, err := follower.Get(ctxT(t), e)
		if err != nil || got.Holder != "a" || got.Term != l1.Term || !got.ExpiresAt.Equal(l1.ExpiresAt) {
			t.Fatalf("Get after %s = %+v, %v; want the renewed lease (term %d, expiry %v)", what, got, err, l1.Term, l1.ExpiresAt)
		}
	}

	if _, err := a.Transfer(ctxT(t), l0, req); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of the lease from before the renewal: %v, want ErrLeaseLost", err)
	}
	unchanged("the stale Transfer")
	other := req
	other.Election = e + "-other"
	if _, err := a.Transfer(ctxT(t), l1, other); err == nil || errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer with a request for another election: %v, want an error other than ErrLeaseLost", err)
	}
	unchanged("the Transfer to another election")
	if n := woken.Load(); n != 0 {
		t.Fatalf("refused Transfers woke the subscriber %d times", n)
	}

	hint, err := a.Transfer(ctxT(t), l1, req)
	if err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	if hint.Election != e || hint.Holder != "b" || hint.Term <= l1.Term || hint.Incarnation != inc ||
		hint.Metadata["from"] != "a" || hint.Duration != req.Duration || hint.AcquiredAt.IsZero() ||
		!hint.ExpiresAt.Equal(hint.AcquiredAt.Add(req.Duration)) {
		t.Fatalf("Transfer = %+v; want b's record of incarnation %s with a term above %d, expiring %v after it was acquired", hint, inc, l1.Term, req.Duration)
	}
	got, err := follower.Get(ctxT(t), e)
	if err != nil || got.Holder != "b" || got.Term != hint.Term || got.Incarnation != inc || !got.ExpiresAt.Equal(hint.ExpiresAt) {
		t.Fatalf("Get after Transfer = %+v, %v; want %+v", got, err, hint)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up", func() bool { return woken.Load() == 1 })
	// The successor continues its incarnation with the hint's term.
	if lb, err := follower.Acquire(ctxT(t), req); err != nil || lb.Term != hint.Term {
		t.Fatalf("the successor's Acquire with its incarnation = %+v, %v; want term %d", lb, err, hint.Term)
	}

	// An expired lease, matched on holder and term alone (no ExpiresAt),
	// transfers nothing either.
	e2 := election(t) + "-expired"
	short, err := a.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e2, Identity: "a", Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the lease to expire", func() bool {
		_, err := a.Get(ctxT(t), e2)
		return errors.Is(err, backendkit.ErrNoLease)
	})
	short.ExpiresAt = time.Time{}
	req.Election = e2
	if _, err := a.Transfer(ctxT(t), short, req); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of an expired lease: %v, want ErrLeaseLost", err)
	}
	if got, err := a.Get(ctxT(t), e2); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after the Transfer of an expired lease = %+v, %v; want ErrNoLease", got, err)
	}
}

// TestTransferAtMaxTerm: the holder of the lease at MaxTerm cannot hand it
// over (no higher term exists): Transfer reports ErrTermExhausted and the
// lease stays the holder's; a lease at MaxTerm that is no longer the
// caller's is reported lost.
func TestTransferAtMaxTerm(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	b, _ := newBackend(t, d, "xfer-max", pglease.Options{})
	e := election(t)
	setTerm(t, b, adm, e, math.MaxInt64-1)
	top, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil || top.Term != math.MaxInt64 {
		t.Fatalf("Acquire = %+v, %v; want term MaxTerm", top, err)
	}
	req := backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute}
	if _, err := b.Transfer(ctxT(t), top, req); !errors.Is(err, backendkit.ErrTermExhausted) {
		t.Fatalf("Transfer at MaxTerm: %v, want ErrTermExhausted", err)
	}
	stale := top.Clone()
	stale.ExpiresAt = stale.ExpiresAt.Add(-time.Second)
	if _, err := b.Transfer(ctxT(t), stale, req); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of a stale lease at MaxTerm: %v, want ErrLeaseLost", err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Holder != "a" || got.Term != math.MaxInt64 || !got.ExpiresAt.Equal(top.ExpiresAt) {
		t.Fatalf("Get after the refused Transfers = %+v, %v; want a's lease at MaxTerm", got, err)
	}
}
