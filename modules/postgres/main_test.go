package pglease_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// envDSN names an existing PostgreSQL server the contract tests may use
// instead of the private one; fault tests always use the private server.
const envDSN = "FXELECTION_TEST_POSTGRES_DSN"

var (
	private *testserver.Private[*testserver.Postgres] // the package's own server
	poolSeq atomic.Int64                              // makes application names unique
)

// TestMain starts one private PostgreSQL for the package and checks for
// leaked goroutines after closing it (goleak.VerifyTestMain would run
// before the Close and see the server's own process waiter).
func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		if storetest.InPoolChild() || electiontest.IsChaosChild() {
			return nil // a child of TestPoolKill or a pause run: it uses its parent's server
		}
		private = testserver.StartPrivate(startPostgres, nil)
		return private.Close
	})
}

func startPostgres() (*testserver.Postgres, error) {
	return testserver.StartPostgres(testserver.PostgresOptions{})
}

// server returns the private server, skipping (failing under CI=true) when
// it could not start.
func server(t testing.TB) *testserver.Postgres { return private.Get(t) }

// dsn returns the DSN of the server contract tests use.
func dsn(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(envDSN); d != "" {
		return d
	}
	return server(t).DSN()
}

// newPool returns a small pool on dsn whose connections carry a unique
// application_name (returned), closed at cleanup.
func newPool(t testing.TB, dsn, label string) (*pgxpool.Pool, string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("pgl-%s-%d", label, poolSeq.Add(1))
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, app
}

// newBackend returns a backend on a new pool; Close runs at cleanup,
// before the pool's Close (cleanups run last-in first-out).
func newBackend(t testing.TB, dsn, label string, opts pglease.Options) (*pglease.Backend, string) {
	t.Helper()
	pool, app := newPool(t, dsn, label)
	b, err := pglease.New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, app
}

// admin returns a pool for test-side SQL on dsn.
func admin(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, _ := newPool(t, dsn, "admin")
	return pool
}

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT     = electiontesting.Context
	election = electiontesting.Election
)

// candidate is a real elector on its own pool, with electiontesting's fault
// timing.
type candidate struct {
	*electiontesting.Candidate
	app string // application_name of its pool's connections
}

func startCandidate(t *testing.T, dsn, election, id string, opts pglease.Options) *candidate {
	t.Helper()
	b, app := newBackend(t, dsn, id, opts)
	return &candidate{electiontesting.StartCandidate(t, b, election, id, nil), app}
}

// leaderOf waits for exactly one of cs to lead and returns it.
func leaderOf(t *testing.T, limit time.Duration, cs ...*candidate) *candidate {
	t.Helper()
	ecs := make([]*electiontesting.Candidate, len(cs))
	for i, c := range cs {
		ecs[i] = c.Candidate
	}
	l, _ := electiontesting.WaitLeader(t, ecs, limit)
	return cs[slices.Index(ecs, l)]
}

// provision decodes settings (JSON values; the "module" key is added) as
// an fxelection.backends.postgres module object, validates and provisions
// it. Its Cleanup runs when the test ends, or earlier through cleanup.
func provision(t testing.TB, settings map[string]any) (b fxelection.Backend, cleanup func() error, err error) {
	t.Helper()
	return moduletest.ProvisionSettings(t, ctxT(t), "fxelection.backends.postgres", settings)
}
