package pglease_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/testserver"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

func TestRegistry(t *testing.T) {
	d := dsn(t)
	b, err := fxelection.NewBackend(ctxT(t), "postgres", fxelection.Settings{"dsn": d, "table": "pgl_registry", "channel": "pgl_reg"})
	if err != nil {
		t.Fatal(err)
	}
	closer, ok := b.(io.Closer)
	if !ok {
		t.Fatal("registry-built backend is not an io.Closer: it owns its pool")
	}
	defer closer.Close()
	if name := fxelection.BackendName(b); name != "postgres" {
		t.Fatalf("BackendName = %q", name)
	}
	e := election(t)
	l, err := b.Acquire(ctxT(t), fxelection.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
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
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), e); err == nil {
		t.Fatal("Get after Close succeeded: the pool should be closed")
	}
}

func TestRegistrySettingErrors(t *testing.T) {
	cases := []struct {
		settings fxelection.Settings
		want     string
	}{
		{fxelection.Settings{}, `"dsn"`},
		{fxelection.Settings{"dsn": ""}, `"dsn"`},
		{fxelection.Settings{"dsn": "postgres://x@127.0.0.1:1/db", "table": "x; DROP TABLE y"}, `setting "table"`},
		{fxelection.Settings{"dsn": "postgres://x@127.0.0.1:1/db", "schema": `a"b`}, `setting "schema"`},
		{fxelection.Settings{"dsn": "postgres://x@127.0.0.1:1/db", "channel": "a b"}, `setting "channel"`},
		{fxelection.Settings{"dsn": "postgres://x@127.0.0.1:1/db", "disable_push": "maybe"}, `"disable_push"`},
		{fxelection.Settings{"dsn": "postgres://x@127.0.0.1:1/db", "skip_create_table": "2"}, `"skip_create_table"`},
	}
	for _, c := range cases {
		b, err := fxelection.NewBackend(ctxT(t), "postgres", c.settings)
		if err == nil {
			_ = b.(io.Closer).Close()
			t.Errorf("settings %v accepted", c.settings)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("settings %v: error %q does not name %s", c.settings, err, c.want)
		}
	}
}

// TestRegistryRedactsPassword checks that neither a DSN that cannot be
// parsed nor a failing connection puts the password in an error.
func TestRegistryRedactsPassword(t *testing.T) {
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
		_, err := fxelection.NewBackend(ctxT(t), "postgres", fxelection.Settings{"dsn": dsn})
		if err == nil {
			t.Errorf("broken DSN accepted")
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "Sup3r%2DSecret") {
			t.Errorf("error leaks the password: %v", err)
		}
		if !strings.Contains(err.Error(), `"dsn"`) {
			t.Errorf("error does not name the setting: %v", err)
		}
	}
	// A valid DSN to a port nobody listens on: the backend is built (no I/O
	// at construction), and its operations fail without the password.
	b, err := fxelection.NewBackend(ctxT(t), "postgres", fxelection.Settings{"dsn": "postgres://user:" + pw + "@127.0.0.1:1/db?connect_timeout=2"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(io.Closer).Close()
	_, err = b.Acquire(ctxT(t), fxelection.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute})
	if err == nil || errors.Is(err, fxelection.ErrLeaseHeld) {
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
			LeaseDuration: faultTiming.lease, RenewDeadline: faultTiming.deadline, RetryPeriod: faultTiming.retry,
		}),
		fx.Populate(&elector, &backend),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 15*time.Second, "the fx elector to lead", elector.IsLeader)
	if fxelection.BackendName(backend) != "postgres" || backend.Table() != `"pgl_fx"` {
		t.Fatalf("backend %s on table %s", fxelection.BackendName(backend), backend.Table())
	}
	if err := app.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// The lease was released on stop.
	b, _ := newBackend(t, d, "fx-check", pglease.Options{Table: "pgl_fx"})
	if _, err := b.Get(ctxT(t), elector.Name()); !errors.Is(err, fxelection.ErrNoLease) {
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
