package pglease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

func TestHostileNamesRejected(t *testing.T) {
	pool, _ := newPool(t, "postgres://127.0.0.1:1/none", "hostile") // never connects
	hostile := []string{`x; DROP TABLE y`, `a"b`, ` `, strings.Repeat("a", 64), `1abc`, `a-b`, `a.b`, `ä`, "a\x00b", `'; --`}
	for _, field := range []string{"Table", "Schema", "Channel"} {
		for _, name := range hostile {
			var opts pglease.Options
			switch field {
			case "Table":
				opts.Table = name
			case "Schema":
				opts.Schema = name
			case "Channel":
				opts.Channel = name
			}
			_, err := pglease.New(pool, opts)
			if !errors.Is(err, pglease.ErrInvalidIdentifier) || !strings.Contains(err.Error(), "Options."+field) {
				t.Errorf("New with %s %q: %v, want ErrInvalidIdentifier naming Options.%s", field, name, err, field)
			}
			if _, err := pglease.CreateTableStatement(opts); !errors.Is(err, pglease.ErrInvalidIdentifier) {
				t.Errorf("CreateTableStatement with %s %q: %v", field, name, err)
			}
		}
	}
	// The longest valid names and mixed case are fine.
	long := strings.Repeat("a", 63)
	if _, err := pglease.New(pool, pglease.Options{Table: long, Schema: "S_1", Channel: "_c9"}); err != nil {
		t.Errorf("valid names rejected: %v", err)
	}
	if _, err := pglease.New(nil, pglease.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := pglease.New((*pgxpool.Pool)(nil), pglease.Options{}); err == nil {
		t.Error("New with a nil *pgxpool.Pool succeeded")
	}
}

func TestCreateTableStatement(t *testing.T) {
	got, err := pglease.CreateTableStatement(pglease.Options{Schema: "ops", Table: "Leases"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, `CREATE TABLE IF NOT EXISTS "ops"."Leases" (`) {
		t.Fatalf("statement = %s", got)
	}
	// Operators run it themselves; the backend then uses the table without
	// creating anything.
	d := dsn(t)
	adm := admin(t, d)
	if _, err := adm.Exec(ctxT(t), `CREATE SCHEMA IF NOT EXISTS ops`); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctxT(t), got); err != nil {
		t.Fatal(err)
	}
	b, _ := newBackend(t, d, "ops", pglease.Options{Schema: "ops", Table: "Leases", SkipCreateTable: true})
	e := election(t)
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil || l.Term == 0 {
		t.Fatalf("Acquire = %+v, %v", l, err)
	}
}

func TestSkipCreateTableMissingTable(t *testing.T) {
	d := dsn(t)
	b, _ := newBackend(t, d, "skip", pglease.Options{Table: "pgl_never_created", SkipCreateTable: true})
	_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "x", Identity: "a", Duration: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "SkipCreateTable") {
		t.Fatalf("Acquire on a missing table: %v, want an error saying so", err)
	}
	if _, err := b.Get(ctxT(t), "x"); err == nil || errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get on a missing table: %v, want a store error", err)
	}
}

// TestCreateTableConcurrently starts many backends on a new table at once:
// each must create or find it without error.
func TestCreateTableConcurrently(t *testing.T) {
	d := dsn(t)
	opts := pglease.Options{Table: "pgl_concurrent_create"}
	adm := admin(t, d)
	for round := range 3 {
		if _, err := adm.Exec(ctxT(t), `DROP TABLE IF EXISTS pgl_concurrent_create`); err != nil {
			t.Fatal(err)
		}
		const n = 12
		bs := make([]*pglease.Backend, n)
		for i := range bs {
			bs[i], _ = newBackend(t, d, "create", opts)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i, b := range bs {
			wg.Go(func() {
				<-start
				_, errs[i] = b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: backend %d: %v", round, i, err)
			}
		}
	}
	// A table dropped under a running backend is created again.
	b, _ := newBackend(t, d, "create", opts)
	if _, err := b.Get(ctxT(t), "e"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctxT(t), `DROP TABLE pgl_concurrent_create`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), "e"); err == nil || errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get right after the drop: %v, want the store error", err)
	}
	if _, err := b.Get(ctxT(t), "e"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after the table was re-created: %v, want ErrNoLease", err)
	}
}

// TestGarbageRows plants rows that break the format in different ways and
// checks every operation reports ErrInvalidRecord (or refuses), never
// panics, and never takes the row over while it is live.
func TestGarbageRows(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	// An operator-made table without the NOT NULL constraints, so NULLs can
	// be planted too.
	if _, err := adm.Exec(ctxT(t), `CREATE TABLE IF NOT EXISTS pgl_loose (name text PRIMARY KEY, holder text,
		metadata jsonb, term bigint, duration_ms bigint, acquired_at timestamptz, renewed_at timestamptz, expires_at timestamptz,
		incarnation text)`); err != nil {
		t.Fatal(err)
	}
	b, _ := newBackend(t, d, "garbage", pglease.Options{Table: "pgl_loose", SkipCreateTable: true})
	rows := []struct{ name, holder, metadata, term, duration, expires string }{
		{"MetadataArray", `'x'`, `'[1,2]'`, `3`, `60000`, `now() + interval '1 minute'`},
		{"MetadataString", `'x'`, `'"str"'`, `3`, `60000`, `now() + interval '1 minute'`},
		{"MetadataNumbers", `'x'`, `'{"a": 1}'`, `3`, `60000`, `now() + interval '1 minute'`},
		{"MetadataNested", `'x'`, `'{"a": {"b": "c"}}'`, `3`, `60000`, `now() + interval '1 minute'`},
		{"MetadataNull", `'x'`, `NULL`, `3`, `60000`, `now() + interval '1 minute'`},
		{"MetadataJSONNull", `'x'`, `'null'`, `3`, `60000`, `now() + interval '1 minute'`},
		{"EmptyHolder", `''`, `'{}'`, `3`, `60000`, `now() + interval '1 minute'`},
		{"ZeroTerm", `'x'`, `'{}'`, `0`, `60000`, `now() + interval '1 minute'`},
		{"NegativeTerm", `'x'`, `'{}'`, `-4`, `60000`, `now() + interval '1 minute'`},
		{"NullTerm", `'x'`, `'{}'`, `NULL`, `60000`, `now() + interval '1 minute'`},
		{"ZeroDuration", `'x'`, `'{}'`, `3`, `0`, `now() + interval '1 minute'`},
		{"NullDuration", `'x'`, `'{}'`, `3`, `NULL`, `now() + interval '1 minute'`},
		{"NullExpiry", `'x'`, `'{}'`, `3`, `60000`, `NULL`},
		{"InfiniteExpiry", `'x'`, `'{}'`, `3`, `60000`, `'infinity'`},
		// Our own identity with a broken term: still not taken over.
		{"OwnHolderBadTerm", `'a'`, `'{}'`, `0`, `60000`, `now() + interval '1 minute'`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			e := election(t)
			_, err := adm.Exec(ctxT(t), `INSERT INTO pgl_loose (name, holder, metadata, term, duration_ms, expires_at)
				VALUES ($1, `+r.holder+`, `+r.metadata+`, `+r.term+`, `+r.duration+`, `+r.expires+`)`, e)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Errorf("Get: %v, want ErrInvalidRecord", err)
			}
			_, err = b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Errorf("Acquire: %v, want ErrInvalidRecord", err)
			}
			// A lease that is not the row's (another holder or term) is lost.
			forged := fxelection.Lease{Election: e, Holder: "a", Term: 3, Duration: time.Minute}
			if _, err := b.Renew(ctxT(t), forged); !errors.Is(err, backendkit.ErrLeaseLost) {
				t.Errorf("Renew of a lease that is not the row's: %v, want ErrLeaseLost", err)
			}
			if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Errorf("Get after the refused renew: %v, want ErrInvalidRecord still", err)
			}
			if err := b.Release(ctxT(t), forged); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
}

// TestTermRules pins down when the term changes: only when a lease starts
// anew (another holder, or the same holder after expiry or release), and
// then to the server's clock in microseconds (or the old term plus one,
// when that is larger).
func TestTermRules(t *testing.T) {
	d := dsn(t)
	b, _ := newBackend(t, d, "terms", pglease.Options{})
	e := election(t)
	req := func(id string, dur time.Duration) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Duration: dur, Metadata: map[string]string{"v": id}}
	}
	ctx := ctxT(t)
	before := time.Now()
	l1, err := b.Acquire(ctx, req("a", 300*time.Millisecond))
	if err != nil || l1.AcquiredAt.IsZero() || !l1.ExpiresAt.After(l1.AcquiredAt) {
		t.Fatalf("first acquire = %+v, %v", l1, err)
	}
	// Same machine: the server's clock is ours, within generous slack.
	if lo, hi := before.Add(-time.Minute).UnixMicro(), time.Now().Add(time.Minute).UnixMicro(); int64(l1.Term) < lo || int64(l1.Term) > hi {
		t.Fatalf("first term %d is not the server's clock in µs (%d…%d)", l1.Term, lo, hi)
	}
	l2, err := b.Acquire(ctx, req("a", time.Minute)) // ours and live: same term
	if err != nil || l2.Term != l1.Term || !l2.AcquiredAt.Equal(l1.AcquiredAt) {
		t.Fatalf("re-acquire = %+v, %v; want term %d and the same AcquiredAt", l2, err, l1.Term)
	}
	l3, err := b.Renew(ctx, l2)
	if err != nil || l3.Term != l1.Term || l3.ExpiresAt.Before(l2.ExpiresAt) {
		t.Fatalf("renew = %+v, %v", l3, err)
	}
	if err := b.Release(ctx, l3); err != nil {
		t.Fatal(err)
	}
	l4, err := b.Acquire(ctx, req("a", 300*time.Millisecond)) // after release: new term
	if err != nil || l4.Term <= l1.Term {
		t.Fatalf("acquire after release = %+v, %v; want a term above %d", l4, err, l1.Term)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the lease to expire", func() bool {
		_, err := b.Get(ctx, e)
		return errors.Is(err, backendkit.ErrNoLease)
	})
	if _, err := b.Renew(ctx, l4); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("renew of an expired lease: %v, want ErrLeaseLost", err)
	}
	l5, err := b.Acquire(ctx, req("a", time.Minute)) // same holder after expiry: new term
	if err != nil || l5.Term <= l4.Term {
		t.Fatalf("acquire after expiry = %+v, %v; want a term above %d", l5, err, l4.Term)
	}
	got, err := b.Get(ctx, e)
	if err != nil || got.Holder != "a" || got.Term != l5.Term || got.Metadata["v"] != "a" || got.Duration != time.Minute {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

func TestContextCancelledBeforeTableExists(t *testing.T) {
	d := dsn(t)
	b, _ := newBackend(t, d, "cancel", pglease.Options{Table: "pgl_cancel_first"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.CreateTable(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateTable with a cancelled context: %v", err)
	}
	if _, err := b.Get(ctx, "e"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
	if _, err := b.Get(ctxT(t), "e"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get: %v", err)
	}
}
