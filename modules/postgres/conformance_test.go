package pglease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	pglease "github.com/fxelection/fxelection/modules/postgres"
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
