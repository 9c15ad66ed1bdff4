package configtest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// leaderLimit bounds the wait for a leader: generous, for a loaded machine.
const leaderLimit = 30 * time.Second

var ctxT = electiontesting.Context

// servers starts a private Redis and PostgreSQL (skipping, or failing
// under CI=true, when a binary is missing).
func servers(t *testing.T) (redisAddr, pgDSN string) {
	t.Helper()
	r := testserver.NewRedis(t, testserver.RedisOptions{})
	p := testserver.NewPostgres(t, testserver.PostgresOptions{})
	return r.Addr(), p.DSN()
}

// document names three elections on two backends: "alpha" and "beta"
// share one Redis module (one client), "gamma" has its own PostgreSQL
// module. The DSN comes from a placeholder.
const document = `{
  "backends": {
    "cache": {"module": "fxelection.backends.redis", "addr": "{env.CT_REDIS_ADDR}", "prefix": "ct:"}
  },
  "elections": [
    {"name": "alpha", "identity": "node-1", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "300ms",
     "metadata": {"addr": "10.0.0.1:8080"}, "backend": "cache"},
    {"name": "beta", "identity": "node-1", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "300ms",
     "backend": "cache"},
    {"name": "gamma", "fx_name": "gamma_pg", "identity": "node-1", "lease_duration": "3s", "renew_deadline": "2s",
     "retry_period": "300ms",
     "backend": {"module": "fxelection.backends.postgres", "dsn": "{env.CT_PG_DSN}", "table": "ct_leases"}}
  ]
}`

type electors struct {
	fx.In

	Alpha *fxelection.Elector   `name:"alpha"`
	Beta  *fxelection.Elector   `name:"beta"`
	Gamma *fxelection.Elector   `name:"gamma_pg"`
	All   []*fxelection.Elector `group:"fxelection.electors"`
}

// TestThreeElectionsTwoBackends: one document, three elections on Redis
// and PostgreSQL, run as an fx app: each elects its leader; on stop every
// lease is released and every module cleaned up (no goroutine outlives
// the test: goleak).
func TestThreeElectionsTwoBackends(t *testing.T) {
	addr, dsn := servers(t)
	t.Setenv("CT_REDIS_ADDR", addr)
	t.Setenv("CT_PG_DSN", dsn)
	opt, err := config.Load([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	var got electors
	app := fxtest.New(t, fx.NopLogger, opt, fx.Populate(&got))
	app.RequireStart()
	if len(got.All) != 3 {
		t.Fatalf("group has %d electors, want 3", len(got.All))
	}
	for _, e := range []*fxelection.Elector{got.Alpha, got.Beta, got.Gamma} {
		electiontesting.WaitFor(t, leaderLimit, e.Status().Election+" to elect a leader", e.IsLeader)
		l, ok := e.Lease()
		if !ok || l.Holder != "node-1" || l.Term == 0 {
			t.Fatalf("%s: lease %+v", e.Status().Election, l)
		}
	}
	if l, _ := got.Alpha.Lease(); l.Metadata["addr"] != "10.0.0.1:8080" {
		t.Errorf("alpha metadata %v", l.Metadata)
	}
	if got.Alpha.Status().Backend != "redis" || got.Gamma.Status().Backend != "postgres" {
		t.Errorf("backends: alpha %q, gamma %q", got.Alpha.Status().Backend, got.Gamma.Status().Backend)
	}

	// While running, the stores hold the leases where the document says.
	rc := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rc.Close()
	rb, err := redislease.New(rc, redislease.Options{KeyPrefix: "ct:", DisablePush: true})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctxT(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pb, err := pglease.New(pool, pglease.Options{Table: "ct_leases", DisablePush: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	for _, c := range []struct {
		b        fxelection.Backend
		election string
	}{{rb, "alpha"}, {rb, "beta"}, {pb, "gamma"}} {
		if l, err := c.b.Get(ctxT(t), c.election); err != nil || l.Holder != "node-1" {
			t.Fatalf("%s while running: %+v, %v", c.election, l, err)
		}
	}

	app.RequireStop()
	for _, c := range []struct {
		b        fxelection.Backend
		election string
	}{{rb, "alpha"}, {rb, "beta"}, {pb, "gamma"}} {
		if l, err := c.b.Get(ctxT(t), c.election); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("%s after stop: %+v, %v; want released (ErrNoLease)", c.election, l, err)
		}
	}
	// The modules' clients are closed: their goroutines (the pgx pool's
	// health check, the Redis and PostgreSQL push listeners) are gone, as
	// goleak checks when the package's tests end.
}

// TestMalformedDSNRefusedByLoad: a DSN pgx refuses is an error of Load
// (the module's Validate parses it), naming the module's path and the
// setting and not the password, before any module is provisioned. (It
// used to pass Load and fail only at start; how a failed start cleans up
// the modules already provisioned is tested in fxelection/config's
// TestFailedStartCleansUp.)
func TestMalformedDSNRefusedByLoad(t *testing.T) {
	addr, _ := servers(t)
	const pw = "ct-Secret-pw-81"
	t.Setenv("CT_REDIS_ADDR", addr)
	t.Setenv("CT_PG_DSN", "postgres://u:"+pw+"@127.0.0.1:notaport/db")
	_, err := config.Load([]byte(document))
	if err == nil {
		t.Fatal("a broken DSN loaded")
	}
	if !strings.Contains(err.Error(), "elections[2].backend") || !strings.Contains(err.Error(), "dsn:") || strings.Contains(err.Error(), pw) {
		t.Fatalf("Load error %q: want the module path and the setting, without the password", err)
	}
}

// TestBadDocumentDialsNothing: a document with a bad setting in one module
// is refused by Load, naming the JSON path, before any module is
// provisioned (nothing to clean up, nothing dialled).
func TestBadDocumentDialsNothing(t *testing.T) {
	t.Setenv("CT_REDIS_ADDR", "127.0.0.1:1")
	t.Setenv("CT_PG_DSN", "postgres://u:p@127.0.0.1:1/db")
	bad := strings.Replace(document, `"table": "ct_leases"`, `"table": "ct leases", "tabel": "x"`, 1)
	_, err := config.Load([]byte(bad))
	if err == nil {
		t.Fatal("bad document loaded")
	}
	for _, want := range []string{"elections[2].backend.tabel: unknown key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	bad = strings.Replace(document, `"prefix": "ct:"`, `"prefix": "{ct}:"`, 1)
	_, err = config.Load([]byte(bad))
	if err == nil || !strings.Contains(err.Error(), "backends.cache: fxelection.backends.redis") || !errors.Is(err, redislease.ErrInvalidOptions) {
		t.Fatalf("brace prefix: %v", err)
	}
}
