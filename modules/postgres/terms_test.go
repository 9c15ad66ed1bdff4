package pglease_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// setTerm gives election a released row (acquired and released as "a")
// whose term is then set to term from outside, as if that many leases had
// come and gone.
func setTerm(t *testing.T, b *pglease.Backend, adm *pgxpool.Pool, election string, term int64) {
	t.Helper()
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: election, Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctxT(t), `UPDATE `+b.Table()+` SET term = $2 WHERE name = $1`, election, term); err != nil {
		t.Fatal(err)
	}
}

// TestTermAfterDelete: an operator's DELETE of the lease row, after
// thousands of terms and while a leader holds it, does not make terms start
// again: the leader loses the lease, and the next holder's term is above
// every earlier one. The row's term is set to 5000 from outside first (as
// if 5000 leases had come and gone), then terms are clock-seeded.
func TestTermAfterDelete(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	b, _ := newBackend(t, d, "del", pglease.Options{})
	e := election(t)
	req := func(id string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute}
	}
	setTerm(t, b, adm, e, 5000)
	highest := uint64(5000)
	for _, id := range []string{"a", "b", "a"} {
		l, err := b.Acquire(ctxT(t), req(id))
		if err != nil || l.Term <= highest {
			t.Fatalf("Acquire = %+v, %v; want a term above %d", l, err, highest)
		}
		highest = l.Term
		if err := b.Release(ctxT(t), l); err != nil {
			t.Fatal(err)
		}
	}
	lead, err := b.Acquire(ctxT(t), req("a"))
	if err != nil {
		t.Fatal(err)
	}
	highest = max(highest, lead.Term)
	if _, err := adm.Exec(ctxT(t), `DELETE FROM `+b.Table()+` WHERE name = $1`, e); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Renew(ctxT(t), lead); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew after DELETE: %v, want ErrLeaseLost", err)
	}
	next, err := b.Acquire(ctxT(t), req("b"))
	if err != nil || next.Term <= highest {
		t.Fatalf("Acquire after DELETE = %+v, %v; want a term above %d", next, err, highest)
	}
	// Even a TRUNCATE of the whole table (every election's row at once).
	if _, err := adm.Exec(ctxT(t), `TRUNCATE `+b.Table()); err != nil {
		t.Fatal(err)
	}
	again, err := b.Acquire(ctxT(t), req("c"))
	if err != nil || again.Term <= next.Term {
		t.Fatalf("Acquire after TRUNCATE = %+v, %v; want a term above %d", again, err, next.Term)
	}
}

// TestTermExhausted: terms are exact up to MaxTerm (the largest bigint);
// at MaxTerm a new lease is refused with ErrTermExhausted instead of an
// overflow or a wrap, while the holder of the lease at MaxTerm keeps
// renewing and re-acquiring it (with its own incarnation: another one
// would need a new term, and is refused too).
func TestTermExhausted(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	b, _ := newBackend(t, d, "max", pglease.Options{})
	e := election(t)
	req := func(id string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute}
	}
	setTerm(t, b, adm, e, math.MaxInt64-1)
	top, err := b.Acquire(ctxT(t), req("a"))
	if err != nil || top.Term != math.MaxInt64 {
		t.Fatalf("Acquire = %+v, %v; want term MaxTerm", top, err)
	}
	if again, err := b.Acquire(ctxT(t), req("a")); err != nil || again.Term != math.MaxInt64 {
		t.Fatalf("re-acquire at MaxTerm = %+v, %v", again, err)
	}
	inc := req("a")
	inc.Incarnation = backendkit.NewIncarnation()
	if _, err := b.Acquire(ctxT(t), inc); !errors.Is(err, backendkit.ErrTermExhausted) {
		// The row's incarnation is none (the requests above named none).
		t.Fatalf("new incarnation of the holder at MaxTerm: %v, want ErrTermExhausted", err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Term != math.MaxInt64 || got.Holder != "a" {
		t.Fatalf("Get after the refused incarnation: %+v, %v", got, err)
	}
	if top, err = b.Acquire(ctxT(t), req("a")); err != nil || top.Term != math.MaxInt64 {
		t.Fatalf("re-acquire at MaxTerm after the refused incarnation = %+v, %v", top, err)
	}
	// Release below needs the lease as last written (its expiry).
	if top, err = b.Renew(ctxT(t), top); err != nil {
		t.Fatalf("Renew at MaxTerm: %v", err)
	}
	var held *backendkit.HeldError
	if _, err := b.Acquire(ctxT(t), req("b")); !errors.As(err, &held) || held.Holder.Term != math.MaxInt64 {
		t.Fatalf("Acquire of the held lease at MaxTerm: %v, want a HeldError", err)
	}
	if err := b.Release(ctxT(t), top); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := b.Acquire(ctxT(t), req(id)); !errors.Is(err, backendkit.ErrTermExhausted) {
			t.Fatalf("Acquire after MaxTerm as %s: %v, want ErrTermExhausted", id, err)
		}
	}
	var term int64
	var holder *string
	if err := adm.QueryRow(ctxT(t), `SELECT term, holder FROM `+b.Table()+` WHERE name = $1`, e).Scan(&term, &holder); err != nil {
		t.Fatal(err)
	}
	if term != math.MaxInt64 || holder != nil {
		t.Fatalf("row after the refusals: term %d, holder %v", term, holder)
	}
}
