package pglease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/testserver"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// envDSN names an existing PostgreSQL server the contract tests may use
// instead of the private one; fault tests always use the private server.
const envDSN = "FXELECTION_TEST_POSTGRES_DSN"

var (
	private  *testserver.Postgres // the package's own server, nil if it did not start
	startErr error                // why it did not
	poolSeq  atomic.Int64         // makes application names unique
)

// TestMain starts one private PostgreSQL for the package and checks for
// leaked goroutines after closing it (goleak.VerifyTestMain would run
// before the Close and see the server's own process waiter).
func TestMain(m *testing.M) {
	private, startErr = testserver.StartPostgres(testserver.PostgresOptions{})
	os.Exit(testserver.RunMain(m, func() error {
		if private == nil {
			return nil
		}
		return private.Close()
	}))
}

// server returns the private server, skipping (failing under CI=true) when
// it could not start.
func server(t testing.TB) *testserver.Postgres {
	t.Helper()
	err := startErr
	if private == nil && err == nil {
		err = errors.New("private postgres: not started")
	}
	testserver.Require(t, err)
	return private
}

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

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// events records an elector's events.
type events struct {
	mu  sync.Mutex
	evs []fxelection.Event
}

func (l *events) Observe(ev fxelection.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *events) all(pred func(fxelection.Event) bool) []fxelection.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []fxelection.Event
	for _, ev := range l.evs {
		if pred(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func kind(k fxelection.EventKind) func(fxelection.Event) bool {
	return func(ev fxelection.Event) bool { return ev.Kind == k }
}

// faultTiming is the short elector timing of the fault tests.
var faultTiming = struct{ lease, deadline, retry, maxBackoff time.Duration }{
	2 * time.Second, 1300 * time.Millisecond, 300 * time.Millisecond, 1200 * time.Millisecond,
}

// candidate is a real elector on its own pool.
type candidate struct {
	e   *fxelection.Elector
	ev  *events
	app string // application_name of its pool's connections
}

func startCandidate(t *testing.T, dsn, election, id string, opts pglease.Options) *candidate {
	t.Helper()
	b, app := newBackend(t, dsn, id, opts)
	e, err := fxelection.New(fxelection.Config{
		Name:          election,
		Identity:      id,
		LeaseDuration: faultTiming.lease,
		RenewDeadline: faultTiming.deadline,
		RetryPeriod:   faultTiming.retry,
		MaxBackoff:    faultTiming.maxBackoff,
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	c := &candidate{e: e, ev: &events{}, app: app}
	e.AddObserver(c.ev)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return c
}

// leaderOf waits for exactly one of cs to lead and returns it.
func leaderOf(t *testing.T, limit time.Duration, cs ...*candidate) *candidate {
	t.Helper()
	var leader *candidate
	testserver.WaitFor(t, limit, "a leader", func() bool {
		leader = nil
		n := 0
		for _, c := range cs {
			if c.e.IsLeader() {
				leader, n = c, n+1
			}
		}
		if n > 1 {
			t.Fatalf("%d candidates lead at once", n)
		}
		return n == 1
	})
	return leader
}

func election(t testing.TB) string {
	return "pgl-" + strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano())
}

// provision decodes settings (JSON values; the "module" key is added) as
// an fxelection.backends.postgres module object, validates and provisions
// it. Its Cleanup runs when the test ends, or earlier through cleanup.
func provision(t testing.TB, settings map[string]any) (b fxelection.Backend, cleanup func() error, err error) {
	t.Helper()
	settings["module"] = "fxelection.backends.postgres"
	raw, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	m, err := moduletest.Decode(string(raw), nil)
	if err != nil {
		return nil, nil, err
	}
	return moduletest.Provision(t, ctxT(t), m)
}
