package pglease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestConfigModule: fxelection.backends.postgres decodes its settings,
// provisions a pool of its own, stores leases in the configured table, and
// Cleanup closes the pool.
func TestConfigModule(t *testing.T) {
	d := dsn(t)
	b, cleanup, err := provision(t, map[string]any{"dsn": d, "table": "pgl_registry", "channel": "pgl_reg"})
	if err != nil {
		t.Fatal(err)
	}
	if name := b.(backendkit.NamedBackend).BackendName(); name != "postgres" {
		t.Fatalf("BackendName = %q", name)
	}
	e := election(t)
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin(t, d).QueryRow(ctxT(t), `SELECT count(*) FROM pgl_registry WHERE name = $1`, e).Scan(&n); err != nil || n != 1 {
		t.Fatalf("row in pgl_registry: %d, %v", n, err)
	}
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	moduletest.CheckCleanupCloses(t, ctxT(t), b, cleanup)
}

// TestConfigModuleErrors: strict decoding and Validate name the JSON path
// or the setting, and never show the DSN's password.
func TestConfigModuleErrors(t *testing.T) {
	const pw = "Sup3r-Secret_pw"
	env := map[string]string{"PG_DSN": "postgres://x:" + pw + "@127.0.0.1:1/db"}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.postgres", "dsn": "{env.PG_DSN}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: `{"module": "fxelection.backends.postgres"}`, Want: moduletest.At("dsn"), Is: config.ErrRequired},
		{Settings: `{"module": "fxelection.backends.postgres", "dsn": ""}`, Want: moduletest.At("dsn"), Is: config.ErrRequired},
		{Settings: `{"module": "fxelection.backends.postgres", "dsn": 5}`, Want: moduletest.At("dsn"), Is: config.ErrWrongType},
		{Settings: obj(`, "tabel": "t"`), Want: moduletest.At("tabel"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "table": "x; DROP TABLE y"`), Want: moduletest.Validated("table \""), Is: pglease.ErrInvalidIdentifier},
		{Settings: obj(`, "schema": "a\"b"`), Want: moduletest.Validated("schema \""), Is: pglease.ErrInvalidIdentifier},
		{Settings: obj(`, "channel": "a b"`), Want: moduletest.Validated("channel \""), Is: pglease.ErrInvalidIdentifier},
		{Settings: obj(`, "table": 1`), Want: moduletest.At("table"), Is: config.ErrWrongType},
		{Settings: obj(`, "disable_push": "maybe"`), Want: moduletest.At("disable_push"), Is: config.ErrWrongType},
		{Settings: obj(`, "skip_create_table": 2`), Want: moduletest.At("skip_create_table"), Is: config.ErrWrongType},
	}, pw)
}

// TestOptionsValidateBothPaths: New and the module refuse the same names
// through Options.Validate, each naming the field its own way.
func TestOptionsValidateBothPaths(t *testing.T) {
	pool := admin(t, dsn(t))
	for _, opts := range []pglease.Options{{Table: "bad name"}, {Schema: `a"b`}, {Channel: "x;y"}} {
		_, errNew := pglease.New(pool, opts)
		errValidate := opts.Validate()
		m := &pglease.ConfigModule{DSN: config.NewSecret("postgres://127.0.0.1:1/db"), Table: opts.Table, Schema: opts.Schema, Channel: opts.Channel}
		errModule := m.Validate()
		for name, err := range map[string]error{"New": errNew, "Options.Validate": errValidate, "module": errModule} {
			if !errors.Is(err, pglease.ErrInvalidIdentifier) {
				t.Errorf("%+v: %s: %v, want ErrInvalidIdentifier", opts, name, err)
			}
		}
		if !strings.Contains(errNew.Error(), "Options.") || strings.Contains(errModule.Error(), "Options.") {
			t.Errorf("%+v: New %q should name the Options field, the module %q its JSON key", opts, errNew, errModule)
		}
	}
}

// TestConfigModuleRedactsPassword checks that neither a DSN that cannot be
// parsed nor a failing connection puts the password in an error.
func TestConfigModuleRedactsPassword(t *testing.T) {
	const pw = "Sup3r-Secret_pw"
	broken := []string{
		"postgres://user:" + pw + "@127.0.0.1:notaport/db",
		"postgres://user:" + pw + "@127.0.0.1:1/db?sslmode=bogus",
		"postgresql://user:" + pw + "@[::1/db",
		"host=127.0.0.1 port=notaport user=u password=" + pw,
		"host=127.0.0.1 port=1 password='" + pw + "' sslmode=bogus",
		"postgres://user@127.0.0.1:1/db?password=" + pw + "&sslmode=bogus",
		"postgres://user:" + "Sup3r%2DSecret_pw" + "@127.0.0.1:x/db",
	}
	for _, dsn := range broken {
		_, _, err := provision(t, map[string]any{"dsn": dsn})
		if err == nil {
			t.Errorf("broken DSN accepted")
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "Sup3r%2DSecret") {
			t.Errorf("error leaks the password: %v", err)
		}
		if !strings.Contains(err.Error(), "dsn:") {
			t.Errorf("error does not name the setting: %v", err)
		}
	}
	// A valid DSN to a port nobody listens on: the backend is built (no I/O
	// at provisioning), and its operations fail without the password.
	b, _, err := provision(t, map[string]any{"dsn": "postgres://user:" + pw + "@127.0.0.1:1/db?connect_timeout=2"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute})
	if err == nil || errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("Acquire against a closed port: %v", err)
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("error leaks the password: %v", err)
	}
}

func TestFxModule(t *testing.T) {
	d := dsn(t)
	var (
		elector *fxelection.Elector
		backend *pglease.Backend
	)
	app := fx.New(
		fx.NopLogger,
		fx.Provide(func(lc fx.Lifecycle) (*pgxpool.Pool, error) {
			pool, err := pgxpool.New(context.Background(), d)
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(pool.Close))
			return pool, nil
		}),
		fx.Supply(pglease.Options{Table: "pgl_fx"}),
		pglease.Module,
		fxelection.Module,
		fx.Supply(fxelection.Config{
			Name: election(t), Identity: "fx",
			Timing: fxelection.Timing{
				LeaseDuration: electiontesting.FaultLease,
				RenewDeadline: electiontesting.FaultRenew,
				RetryPeriod:   electiontesting.FaultRetry,
			},
		}),
		fx.Populate(&elector, &backend),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the fx elector to lead", elector.IsLeader)
	if backend.BackendName() != "postgres" || backend.Table() != `"pgl_fx"` {
		t.Fatalf("backend %s on table %s", backend.BackendName(), backend.Table())
	}
	if err := app.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// The lease was released on stop.
	b, _ := newBackend(t, d, "fx-check", pglease.Options{Table: "pgl_fx"})
	if _, err := b.Get(ctxT(t), elector.Status().Election); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("after app stop Get = %v, want ErrNoLease", err)
	}
}

func TestFxModuleRejectsBadOptions(t *testing.T) {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(&pgxpool.Pool{}),
		fx.Supply(pglease.Options{Table: "bad name"}),
		pglease.Module,
		fx.Invoke(func(fxelection.Backend) {}),
	)
	if err := app.Err(); !errors.Is(err, pglease.ErrInvalidIdentifier) || !strings.Contains(err.Error(), "Options.Table") {
		t.Fatalf("app.Err() = %v, want the option-naming error", err)
	}
}
