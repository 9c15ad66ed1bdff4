package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	"github.com/fxelection/fxelection/modules/postgres/pgfence"
)

func TestInvalidIdentifiers(t *testing.T) {
	for _, opts := range []pgfence.Options{
		{Table: `x"; DROP TABLE users; --`},
		{Table: "1abc"},
		{Table: strings.Repeat("a", 64)},
		{Table: "ok", Schema: "bad schema"},
		{Table: "naïve"},
	} {
		if _, err := pgfence.New(opts); !errors.Is(err, pgfence.ErrInvalidIdentifier) {
			t.Errorf("New(%+v): %v, want ErrInvalidIdentifier", opts, err)
		}
		if _, err := pgfence.CreateTableStatement(opts); !errors.Is(err, pgfence.ErrInvalidIdentifier) {
			t.Errorf("CreateTableStatement(%+v): %v", opts, err)
		}
	}
	stmt, err := pgfence.CreateTableStatement(pgfence.Options{Schema: "ops"})
	if err != nil || !strings.Contains(stmt, `"ops"."fxelection_fence"`) {
		t.Fatalf("%q %v", stmt, err)
	}
}

// data is a table of guarded writes, in insertion order.
type data struct {
	pool  *pgxpool.Pool
	guard *pgfence.Guard
	name  string
}

func newData(t testing.TB, pool *pgxpool.Pool) *data {
	t.Helper()
	g, fenceTable := newGuard(t, pool)
	name := fenceTable + "_data"
	if _, err := pool.Exec(ctxT(t), `CREATE TABLE `+name+` (id bigserial PRIMARY KEY, term bigint NOT NULL, writer text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &data{pool: pool, guard: g, name: name}
}

// write inserts a row in a transaction guarded with the token in ctx. It
// returns the highest term already committed that the transaction saw after
// its check (a stale write if higher than its own).
func (d *data) write(ctx context.Context, writer string) (seen uint64, err error) {
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if err := d.guard.Check(ctx, tx); err != nil {
			return err
		}
		tok, _ := fence.FromContext(ctx)
		var max int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(term), 0) FROM `+d.name).Scan(&max); err != nil {
			return err
		}
		seen = uint64(max)
		_, err := tx.Exec(ctx, `INSERT INTO `+d.name+` (term, writer) VALUES ($1, $2)`, int64(tok.Term), writer)
		return err
	})
	return seen, err
}

func (d *data) rows(t testing.TB) (terms []uint64, writers []string) {
	t.Helper()
	rows, err := d.pool.Query(ctxT(t), `SELECT term, writer FROM `+d.name+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var term int64
		var w string
		if err := rows.Scan(&term, &w); err != nil {
			t.Fatal(err)
		}
		terms, writers = append(terms, uint64(term)), append(writers, w)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return terms, writers
}

func tokenCtx(ctx context.Context, election string, term uint64) context.Context {
	return fence.WithToken(ctx, fence.Token{Election: election, Term: term})
}

func TestCheck(t *testing.T) {
	ctx := ctxT(t)
	d := newData(t, newPool(t, 4))
	el := election(t)

	for _, term := range []uint64{5, 5, 7} {
		if _, err := d.write(tokenCtx(ctx, el, term), "w"); err != nil {
			t.Fatalf("term %d: %v", term, err)
		}
	}
	_, err := d.write(tokenCtx(ctx, el, 6), "stale")
	var ste *fence.StaleTermError
	if !errors.As(err, &ste) || !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("term 6 after 7: %v, want StaleTermError", err)
	}
	if ste.Highest != 7 || ste.Term != 6 || ste.Election != el {
		t.Fatalf("stale error fields: %+v", ste)
	}
	// Other elections are independent.
	if _, err := d.write(tokenCtx(ctx, el+"-other", 1), "other"); err != nil {
		t.Fatal(err)
	}
	terms, _ := d.rows(t)
	if fmt.Sprint(terms) != "[5 5 7 1]" {
		t.Fatalf("committed terms %v", terms)
	}

	// Bad tokens never reach the database.
	if _, err := d.write(ctx, "none"); !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("no token: %v", err)
	}
	for _, term := range []uint64{0, backendkit.MaxTerm + 1} {
		if _, err := d.write(tokenCtx(ctx, el, term), "bad"); !errors.Is(err, fence.ErrInvalidToken) {
			t.Fatalf("term %d: %v", term, err)
		}
	}
	if _, err := d.write(tokenCtx(ctx, el, backendkit.MaxTerm), "max"); err != nil {
		t.Fatalf("MaxTerm: %v", err)
	}
}

// TestStaleCommitFails: a caller that ignores the error cannot commit.
func TestStaleCommitFails(t *testing.T) {
	ctx := ctxT(t)
	pool := newPool(t, 4)
	d := newData(t, pool)
	el := election(t)
	if _, err := d.write(tokenCtx(ctx, el, 10), "new"); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := d.guard.Check(tokenCtx(ctx, el, 9), tx); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("check: %v", err)
	}
	_, _ = tx.Exec(ctx, `INSERT INTO `+d.name+` (term, writer) VALUES (9, 'ignored')`)
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit after a stale check succeeded")
	}
	if terms, _ := d.rows(t); len(terms) != 1 {
		t.Fatalf("rows %v", terms)
	}
}

// TestCheckWaitsForNewerTerm: a check that raced a newer term's open
// transaction waits for it and then refuses.
func TestCheckWaitsForNewerTerm(t *testing.T) {
	ctx := ctxT(t)
	pool := newPool(t, 4)
	d := newData(t, pool)
	el := election(t)
	if _, err := d.write(tokenCtx(ctx, el, 1), "old"); err != nil {
		t.Fatal(err)
	}
	newer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.guard.Check(tokenCtx(ctx, el, 2), newer); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := d.write(tokenCtx(ctx, el, 1), "old-late"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("old term's check did not wait for the open newer transaction: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("old term after newer commit: %v", err)
	}
}

// TestPartitionedLeaderIsFenced: two electors on one election; the leader is
// cut off from the lease store, the other takes over, and the old leader's
// late write with its old term is refused while the new leader's succeed.
func TestPartitionedLeaderIsFenced(t *testing.T) {
	ctx := ctxT(t)
	d := newData(t, newPool(t, 4))
	el := election(t)

	// Two electors with electiontesting's fault timing, each behind a
	// faultinject.Backend.
	var cs []*electiontesting.Candidate
	for _, id := range []string{"a", "b"} {
		b, err := pglease.New(newPool(t, 4), pglease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		cs = append(cs, electiontesting.StartFaultyCandidate(t, b, el, id, nil))
	}
	old, _ := electiontesting.WaitLeader(t, cs, 10*time.Second)
	next := cs[0]
	if next == old {
		next = cs[1]
	}

	// The old leader writes under its term, as leader code does.
	var oldLease fxelection.Lease
	ran, err := old.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		oldLease, _ = fxelection.LeaseFromContext(ctx)
		_, err := d.write(ctx, "old")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("old leader's write: ran=%v %v", ran, err)
	}

	old.Faulty.Partition(true) // cut off from the lease store, not from the data
	electiontesting.WaitFor(t, electiontesting.Eventually, "the other elector to lead", next.Elector.IsLeader)
	ran, err = next.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		lease, _ := fxelection.LeaseFromContext(ctx)
		if lease.Term <= oldLease.Term {
			t.Errorf("new term %d not above old %d", lease.Term, oldLease.Term)
		}
		_, err := d.write(ctx, "new")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("new leader's write: ran=%v %v", ran, err)
	}

	// The old leader, paused through all this, resumes and writes with the
	// term it had.
	_, err = d.write(fence.WithToken(ctx, fence.TokenOf(oldLease)), "old-late")
	if !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("old leader's late write: %v, want ErrStaleTerm", err)
	}
	if ran, _ := old.Elector.RunIfLeader(ctx, func(context.Context) error { return nil }); ran {
		t.Fatal("partitioned elector still runs leader work")
	}
	// The new leader keeps writing.
	ran, err = next.Elector.RunIfLeader(ctx, func(ctx context.Context) error { _, err := d.write(ctx, "new"); return err })
	if !ran || err != nil {
		t.Fatalf("new leader's second write: ran=%v %v", ran, err)
	}
	_, writers := d.rows(t)
	if fmt.Sprint(writers) != "[old new new]" {
		t.Fatalf("committed writes %v", writers)
	}
}

// TestConcurrentWritersNeverCommitStale: over many rounds, writers with the
// current term and with older terms race; no transaction ever commits after
// one with a higher term.
func TestConcurrentWritersNeverCommitStale(t *testing.T) {
	ctx := ctxT(t)
	const writers, rounds = 6, 40
	d := newData(t, newPool(t, writers+2))
	el := election(t)
	var accepted, refused, violations atomic.Int64
	for r := 1; r <= rounds; r++ {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				term := uint64(r + 3 - w%4) // the current term and three older ones
				for range 2 {
					seen, err := d.write(tokenCtx(ctx, el, term), fmt.Sprintf("w%d", w))
					switch {
					case err == nil:
						accepted.Add(1)
						if seen > term {
							violations.Add(1)
						}
					case errors.Is(err, fence.ErrStaleTerm):
						refused.Add(1)
					default:
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	terms, _ := d.rows(t)
	for i := 1; i < len(terms); i++ {
		if terms[i] < terms[i-1] {
			violations.Add(1)
		}
	}
	t.Logf("%d writes committed, %d refused as stale, %d stale commits", accepted.Load(), refused.Load(), violations.Load())
	if violations.Load() != 0 {
		t.Fatalf("%d stale writes committed", violations.Load())
	}
	if accepted.Load() == 0 || refused.Load() == 0 || int(accepted.Load()) != len(terms) {
		t.Fatalf("accepted %d (rows %d), refused %d", accepted.Load(), len(terms), refused.Load())
	}
}

// BenchmarkWrite measures the guard's cost per write: one transaction with
// one INSERT, unguarded and guarded, in the same run; "paired" alternates
// them op by op so both see the same load.
func BenchmarkWrite(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, 4)
	d := newData(b, pool)
	el := election(b)
	gctx := tokenCtx(ctx, el, 1)
	insert := `INSERT INTO ` + d.name + ` (term, writer) VALUES (1, 'bench')`
	unguarded := func() error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, insert); return err })
	}
	guarded := func() error {
		return pgx.BeginFunc(gctx, pool, func(tx pgx.Tx) error {
			if err := d.guard.Check(gctx, tx); err != nil {
				return err
			}
			_, err := tx.Exec(gctx, insert)
			return err
		})
	}
	for name, op := range map[string]func() error{"unguarded": unguarded, "guarded": guarded} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("paired", func(b *testing.B) {
		var tu, tg time.Duration
		n := 0
		for b.Loop() {
			t0 := time.Now()
			if err := unguarded(); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := guarded(); err != nil {
				b.Fatal(err)
			}
			tu, tg, n = tu+t1.Sub(t0), tg+time.Since(t1), n+1
		}
		b.ReportMetric(float64(tu.Nanoseconds())/float64(n), "unguarded-ns/op")
		b.ReportMetric(float64(tg.Nanoseconds())/float64(n), "guarded-ns/op")
		b.ReportMetric(float64(tg)/float64(tu), "ratio")
	})
}

// TestRepeatableReadRace: under REPEATABLE READ, a check that raced a newer
// term's transaction fails with a serialization error (never commits), and
// a retry gets ErrStaleTerm.
func TestRepeatableReadRace(t *testing.T) {
	ctx := ctxT(t)
	pool := newPool(t, 4)
	d := newData(t, pool)
	el := election(t)
	if _, err := d.write(tokenCtx(ctx, el, 1), "first"); err != nil {
		t.Fatal(err)
	}
	rr := pgx.TxOptions{IsoLevel: pgx.RepeatableRead}
	old, err := pool.BeginTx(ctx, rr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Rollback(ctx) }()
	if _, err := old.Exec(ctx, `SELECT 1 FROM `+d.name); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	if _, err := d.write(tokenCtx(ctx, el, 2), "newer"); err != nil {
		t.Fatal(err)
	}
	err = d.guard.Check(tokenCtx(ctx, el, 1), old)
	if err == nil {
		t.Fatal("old term passed the check under REPEATABLE READ after a newer commit")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.SQLState() != "40001" {
		t.Fatalf("check: %v, want a serialization failure (SQLSTATE 40001) the caller can detect", err)
	}
	retry, err := pool.BeginTx(ctx, rr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = retry.Rollback(ctx) }()
	if err := d.guard.Check(tokenCtx(ctx, el, 1), retry); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("retry: %v, want ErrStaleTerm", err)
	}
}
