package pglease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/fencedcounter"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	"github.com/fxelection/fxelection/modules/postgres/pgfence"
)

// putGarbage plants a live row the backend cannot decode (metadata that is
// not an object of strings), expiring after ttl by the server's clock.
func putGarbage(t *testing.T, dsn string, opts pglease.Options) func(*testing.T, string, time.Duration) {
	return func(t *testing.T, election string, ttl time.Duration) {
		b, _ := newBackend(t, dsn, "garbage", opts)
		if err := b.CreateTable(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		_, err := admin(t, dsn).Exec(ctxT(t), `INSERT INTO `+b.Table()+`
			(name, holder, metadata, term, duration_ms, expires_at)
			VALUES ($1, 'foreign-writer', '[1, {"not": "a lease"}]', 7, $2::bigint, now() + $2::bigint * interval '1 millisecond')
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, metadata = excluded.metadata,
				term = excluded.term, duration_ms = excluded.duration_ms, expires_at = excluded.expires_at`,
			election, ttl.Milliseconds())
		if err != nil {
			t.Fatal(err)
		}
	}
}

// deleteRecord deletes the election's row behind the backends' backs, as
// an operator cleaning the table would.
func deleteRecord(dsn string, opts pglease.Options) func(*testing.T, string) {
	return func(t *testing.T, election string) {
		b, _ := newBackend(t, dsn, "delete", opts)
		tag, err := admin(t, dsn).Exec(ctxT(t), `DELETE FROM `+b.Table()+` WHERE name = $1`, election)
		if err != nil {
			t.Fatal(err)
		}
		if tag.RowsAffected() != 1 {
			t.Fatalf("DELETE removed %d rows, want 1", tag.RowsAffected())
		}
	}
}

// pgCounter is a fenced counter (fencedcounter.Counter) in PostgreSQL:
// every read and every write is a transaction of its own
// fenced by pgfence (Guard.Check first), so PostgreSQL itself refuses a
// holder whose term is stale.
type pgCounter struct {
	pool  *pgxpool.Pool
	guard *pgfence.Guard
}

// newCounter returns a counter on dsn: a pgfence table and the counter's
// tables, shared by every run (each uses keys of its own).
func newCounter(dsn string) func(*testing.T) fencedcounter.Counter {
	return func(t *testing.T) fencedcounter.Counter {
		pool := admin(t, dsn)
		g, err := pgfence.New(pgfence.Options{Table: "lock_fence"})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CreateTable(ctxT(t), pool); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS lock_counter (key text PRIMARY KEY, value bigint NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS lock_accepted (id bigserial PRIMARY KEY, key text NOT NULL, term bigint NOT NULL)`,
		} {
			if _, err := pool.Exec(ctxT(t), stmt); err != nil {
				t.Fatal(err)
			}
		}
		return &pgCounter{pool: pool, guard: g}
	}
}

// fenced runs f in a transaction that pgfence fences with term.
func (c *pgCounter) fenced(ctx context.Context, key string, term uint64, f func(pgx.Tx) error) error {
	ctx = fence.WithToken(ctx, fence.Token{Election: key, Term: term})
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := c.guard.Check(ctx, tx); err != nil {
			return err
		}
		return f(tx)
	})
}

func (c *pgCounter) Read(ctx context.Context, key string, term uint64) (uint64, error) {
	var v int64
	err := c.fenced(ctx, key, term, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT value FROM lock_counter WHERE key = $1`, key).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	return uint64(v), err
}

func (c *pgCounter) Write(ctx context.Context, key string, term, value uint64) error {
	return c.fenced(ctx, key, term, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO lock_counter (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, int64(value))
		if err != nil {
			return err
		}
		// The fence's row lock orders the key's writes: ids follow the
		// order PostgreSQL accepted them.
		_, err = tx.Exec(ctx, `INSERT INTO lock_accepted (key, term) VALUES ($1, $2)`, key, int64(term))
		return err
	})
}

func (c *pgCounter) Accepted(ctx context.Context, key string) ([]uint64, error) {
	rows, err := c.pool.Query(ctx, `SELECT term FROM lock_accepted WHERE key = $1 ORDER BY id`, key)
	if err != nil {
		return nil, err
	}
	terms, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	out := make([]uint64, len(terms))
	for i, term := range terms {
		out[i] = uint64(term)
	}
	return out, err
}

// TestFencedCounter: a counter behind pgfence fences as the lock feature
// cases' holders need (fencedcounter.Check).
func TestFencedCounter(t *testing.T) {
	fencedcounter.Check(t, newCounter(dsn(t))(t))
}

// TestConformance runs the suite (contract and smoke) on the default table.
func TestConformance(t *testing.T) {
	d := dsn(t)
	opts := pglease.Options{}
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "conf", opts)
		return b
	}, electiontest.Options{PutGarbage: putGarbage(t, d, opts), DeleteRecord: deleteRecord(d, opts)})
}

// TestConformanceSchemaNoPush runs the suite on a table in its own schema
// with push wake-up off: hand-over then relies on polling alone.
func TestConformanceSchemaNoPush(t *testing.T) {
	d := dsn(t)
	if _, err := admin(t, d).Exec(ctxT(t), `CREATE SCHEMA IF NOT EXISTS pgl_custom`); err != nil {
		t.Fatal(err)
	}
	opts := pglease.Options{Schema: "pgl_custom", Table: "Leases_2", DisablePush: true}
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "conf-nopush", opts)
		return b
	}, electiontest.Options{PutGarbage: putGarbage(t, d, opts), DeleteRecord: deleteRecord(d, opts), PushDisabled: true})
}
