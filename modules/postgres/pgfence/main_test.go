package pgfence_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/modules/postgres/pgfence"
)

var (
	private *testserver.Private[*testserver.Postgres] // the package's own server
	seq     atomic.Int64
)

// TestMain starts one private PostgreSQL for the package and checks for
// leaked goroutines after closing it.
func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		private = testserver.StartPrivate(func() (*testserver.Postgres, error) {
			return testserver.StartPostgres(testserver.PostgresOptions{})
		}, nil)
		return private.Close
	})
}

// dsn returns the private server's DSN, skipping (failing under CI=true)
// when it could not start.
func dsn(t testing.TB) string { return private.Get(t).DSN() }

func newPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT     = electiontesting.Context
	election = electiontesting.Election
)

// newGuard returns a guard on a fresh table of its own (and the table's name).
func newGuard(t testing.TB, pool *pgxpool.Pool) (*pgfence.Guard, string) {
	t.Helper()
	table := fmt.Sprintf("fence_%d", seq.Add(1))
	g, err := pgfence.New(pgfence.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(ctxT(t), pool); err != nil {
		t.Fatal(err)
	}
	return g, table
}
