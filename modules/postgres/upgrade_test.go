package pglease_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// What the version before incarnations ran (its createTableSQL and its
// acquire statement, abridged to what an old writer changes): the tests
// below play that version beside this one.
const (
	oldCreateTable = `CREATE TABLE %s (
	name        text        PRIMARY KEY,
	holder      text,
	metadata    jsonb       NOT NULL DEFAULT '{}',
	term        bigint      NOT NULL DEFAULT 0,
	duration_ms bigint      NOT NULL DEFAULT 0,
	acquired_at timestamptz,
	renewed_at  timestamptz,
	expires_at  timestamptz NOT NULL DEFAULT '-infinity'
)`
	oldAcquire = `INSERT INTO %s AS l (name, holder, metadata, term, duration_ms, acquired_at, renewed_at, expires_at)
	VALUES ($1, $2, '{}', floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint, $3::bigint, now(), now(), now() + $3::bigint * interval '1 millisecond')
	ON CONFLICT (name) DO UPDATE SET
		holder      = excluded.holder,
		metadata    = excluded.metadata,
		duration_ms = excluded.duration_ms,
		renewed_at  = excluded.renewed_at,
		expires_at  = excluded.expires_at,
		term        = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.term ELSE greatest(l.term + 1, excluded.term) END,
		acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.acquired_at ELSE excluded.acquired_at END
	WHERE (l.holder = excluded.holder AND l.expires_at > now() AND l.term > 0)
		OR ((l.holder IS NULL OR l.expires_at <= now()) AND coalesce(l.term, 0) < 9223372036854775807)
	RETURNING l.term`
)

// oldTable creates a fresh table as the version before incarnations did.
func oldTable(t *testing.T, adm *pgxpool.Pool, name string) {
	t.Helper()
	if _, err := adm.Exec(ctxT(t), `DROP TABLE IF EXISTS `+name); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctxT(t), fmt.Sprintf(oldCreateTable, name)); err != nil {
		t.Fatal(err)
	}
}

// oldAcquireAs runs the old version's acquire statement for id and returns
// the term it left in the row (0 if refused).
func oldAcquireAs(t *testing.T, adm *pgxpool.Pool, table, election, id string, d time.Duration) uint64 {
	t.Helper()
	var term int64
	err := adm.QueryRow(ctxT(t), fmt.Sprintf(oldAcquire, table), election, id, d.Milliseconds()).Scan(&term)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return uint64(term)
}

func incReq(election, id, inc string, d time.Duration) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{Election: election, Identity: id, Incarnation: inc, Duration: d}
}

// TestUpgradeEarlierTable: backends of this version start at once on a
// table of the version before, holding a live lease an old process of
// identity "a" took. They add the columns without errors (the advisory
// lock serialises them), and a new incarnation of "a" takes the
// old process's lease at once with a higher term.
func TestUpgradeEarlierTable(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	const table, n = "pgl_upgrade", 8
	for round := range 3 {
		oldTable(t, adm, table)
		e := election(t)
		oldTerm := oldAcquireAs(t, adm, table, e, "a", time.Minute)
		backends := make([]*pglease.Backend, n)
		for i := range backends {
			backends[i], _ = newBackend(t, d, "upgrade", pglease.Options{Table: table, DisablePush: true})
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i, b := range backends {
			wg.Go(func() {
				<-start
				_, errs[i] = b.Get(ctxT(t), e)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Get %d on the table being upgraded: %v", round, i, err)
			}
		}
		var cols int
		if err := adm.QueryRow(ctxT(t), `SELECT count(*) FROM information_schema.columns
			WHERE table_name = $1 AND column_name IN ('incarnation', 'incarnation_term')`, table).Scan(&cols); err != nil || cols != 2 {
			t.Fatalf("round %d: incarnation columns after the upgrade: %d, %v", round, cols, err)
		}
		inc := backendkit.NewIncarnation()
		l, err := backends[0].Acquire(ctxT(t), incReq(e, "a", inc, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if l.Term <= oldTerm || l.Incarnation != inc {
			t.Fatalf("new incarnation over the old version's lease: term %d incarnation %q, want > %d and %q", l.Term, l.Incarnation, oldTerm, inc)
		}
		again, err := backends[1].Acquire(ctxT(t), incReq(e, "a", inc, time.Minute))
		if err != nil || again.Term != l.Term {
			t.Fatalf("retry by the same incarnation: %+v, %v; want term %d", again, err, l.Term)
		}
	}
}

// TestOlderVersionBeside: an older version keeps working on the upgraded
// table, and the incarnation it cannot know about never outlives the term
// it was recorded for: when the old version starts a new term for the
// same identity, a new-version retry with the earlier incarnation is a new
// leadership, not a continuation of the old version's.
func TestOlderVersionBeside(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	const table = "pgl_beside"
	oldTable(t, adm, table)
	b, _ := newBackend(t, d, "beside", pglease.Options{Table: table, DisablePush: true})
	if err := b.CreateTable(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	e := election(t)
	inc := backendkit.NewIncarnation()
	l1, err := b.Acquire(ctxT(t), incReq(e, "a", inc, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// The old version refuses a live lease of another identity...
	if got := oldAcquireAs(t, adm, table, e, "old", time.Minute); got != 0 {
		t.Fatalf("old version took a live lease: term %d", got)
	}
	// ...and takes it after expiry, as the same identity "a" here. (The
	// same incarnation shortens its lease to a millisecond, keeping the
	// term, and lets it expire.)
	if short, err := b.Acquire(ctxT(t), incReq(e, "a", inc, time.Millisecond)); err != nil || short.Term != l1.Term {
		t.Fatalf("re-acquire with a short lease: %+v, %v; want term %d", short, err, l1.Term)
	}
	time.Sleep(50 * time.Millisecond)
	t2 := oldAcquireAs(t, adm, table, e, "a", time.Minute)
	if t2 <= l1.Term {
		t.Fatalf("old version's term %d after expiry, want > %d", t2, l1.Term)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Term != t2 || got.Incarnation != "" {
		t.Fatalf("Get after the old version's acquire: %+v, %v; want term %d and no incarnation", got, err, t2)
	}
	l3, err := b.Acquire(ctxT(t), incReq(e, "a", inc, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if l3.Term <= t2 {
		t.Fatalf("new version's acquire over the old version's term %d kept or lowered it: %d", t2, l3.Term)
	}
	// The old version, same identity, continues the new term (it knows no
	// incarnations: the limit the package documents).
	if got := oldAcquireAs(t, adm, table, e, "a", time.Minute); got != l3.Term {
		t.Fatalf("old version's re-acquire: term %d, want %d", got, l3.Term)
	}
}

// TestTableWithoutColumns: with SkipCreateTable, a table of the version
// before is used as it is (Acquire ignores incarnations, Lease.Incarnation
// stays empty, a warning is logged) until the operator runs
// UpgradeTableStatement and the backend looks again (CreateTable).
func TestTableWithoutColumns(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	const table = "pgl_skip_old"
	oldTable(t, adm, table)
	var logs electiontesting.LogBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	b, _ := newBackend(t, d, "skip-old", pglease.Options{Table: table, DisablePush: true, SkipCreateTable: true, Logger: logger})
	e := election(t)
	l1, err := b.Acquire(ctxT(t), incReq(e, "a", backendkit.NewIncarnation(), time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	l2, err := b.Acquire(ctxT(t), incReq(e, "a", backendkit.NewIncarnation(), time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if l1.Incarnation != "" || l2.Term != l1.Term {
		t.Fatalf("without the columns: incarnation %q, terms %d then %d; want none and one term", l1.Incarnation, l1.Term, l2.Term)
	}
	if !strings.Contains(logs.String(), "incarnation columns") {
		t.Fatalf("no warning logged: %q", logs.String())
	}
	if _, err := b.Renew(ctxT(t), l2); err != nil {
		t.Fatal(err)
	}
	upgrade, err := pglease.UpgradeTableStatement(pglease.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if _, err := adm.Exec(ctxT(t), upgrade); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.CreateTable(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	inc := backendkit.NewIncarnation()
	l3, err := b.Acquire(ctxT(t), incReq(e, "a", inc, time.Minute))
	if err != nil || l3.Term <= l2.Term || l3.Incarnation != inc {
		t.Fatalf("after the upgrade: %+v, %v; want a term above %d", l3, err, l2.Term)
	}
}

// TestUpgradeWithoutOwnership: a role that may use but not alter an
// earlier version's table works on it without incarnations, without
// errors.
func TestUpgradeWithoutOwnership(t *testing.T) {
	d := dsn(t)
	if !strings.HasPrefix(d, "postgres://postgres@") {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs the private server's trusted superuser (internal/testserver's PostgreSQL)")
		}
		t.Skip("needs the private server's trusted superuser")
	}
	adm := admin(t, d)
	const table, role = "pgl_not_owner", "pgl_user"
	oldTable(t, adm, table)
	for _, q := range []string{
		`DO $$ BEGIN CREATE ROLE ` + role + ` LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		`GRANT SELECT, INSERT, UPDATE ON ` + table + ` TO ` + role,
	} {
		if _, err := adm.Exec(ctxT(t), q); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := newBackend(t, strings.Replace(d, "postgres://postgres@", "postgres://"+role+"@", 1), "not-owner", pglease.Options{Table: table, DisablePush: true})
	e := election(t)
	l, err := b.Acquire(ctxT(t), incReq(e, "a", backendkit.NewIncarnation(), time.Minute))
	if err != nil || l.Incarnation != "" {
		t.Fatalf("Acquire as a role that cannot alter the table: %+v, %v", l, err)
	}
	if _, err := b.Renew(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
}

// TestTableRecreatedByOlderVersion: the table is dropped and re-created
// without the columns (an older version started first) under a running
// backend: one operation fails, the next upgrades the table again.
func TestTableRecreatedByOlderVersion(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	const table = "pgl_recreated_old"
	b, _ := newBackend(t, d, "recreated-old", pglease.Options{Table: table, DisablePush: true})
	if _, err := adm.Exec(ctxT(t), `DROP TABLE IF EXISTS `+table); err != nil {
		t.Fatal(err)
	}
	e := election(t)
	if _, err := b.Acquire(ctxT(t), incReq(e, "a", backendkit.NewIncarnation(), time.Minute)); err != nil {
		t.Fatal(err)
	}
	oldTable(t, adm, table)
	_, _ = b.Acquire(ctxT(t), incReq(e, "a", backendkit.NewIncarnation(), time.Minute)) // may fail once: a column is missing
	inc := backendkit.NewIncarnation()
	l, err := b.Acquire(ctxT(t), incReq(e, "a", inc, time.Minute))
	if err != nil || l.Incarnation != inc {
		t.Fatalf("Acquire after the table was re-created by an older version: %+v, %v", l, err)
	}
}

// TestDecodeIncarnation: the row's incarnation is reported only for the
// term it was recorded with, and validated then.
func TestDecodeIncarnation(t *testing.T) {
	exp := time.Now().Add(time.Minute)
	fields := func(inc string, incTerm int64) pglease.RowFields {
		holder, md, term, dur := "a", "{}", int64(7), int64(60000)
		return pglease.RowFields{Holder: &holder, Metadata: &md, Term: &term, DurationMS: &dur, ExpiresAt: &exp,
			Incarnation: &inc, IncarnationTerm: &incTerm}
	}
	if l, err := pglease.DecodeRow("e", fields("abc-1", 7)); err != nil || l.Incarnation != "abc-1" {
		t.Fatalf("incarnation of the row's term: %+v, %v", l, err)
	}
	if l, err := pglease.DecodeRow("e", fields("abc-1", 6)); err != nil || l.Incarnation != "" {
		t.Fatalf("incarnation of an earlier term: %+v, %v; want none", l, err)
	}
	for _, bad := range []string{"has space", "\x1b[31m", strings.Repeat("x", backendkit.MaxIncarnationLen+1), "ünï"} {
		if _, err := pglease.DecodeRow("e", fields(bad, 7)); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("incarnation %q: %v, want ErrInvalidRecord", bad, err)
		} else if strings.Contains(err.Error(), bad) {
			t.Errorf("error quotes the stored incarnation: %v", err)
		}
	}
	// A stale garbage incarnation is ignored, not reported.
	if _, err := pglease.DecodeRow("e", fields("has space", 6)); err != nil {
		t.Fatalf("garbage incarnation of an earlier term: %v", err)
	}
}
