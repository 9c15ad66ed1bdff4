package memcachedlease

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
	"github.com/fxelection/fxelection/modules/cache/internal/cachetest"
)

// TestRegistry: "memcached" builds a working backend that owns its client.
func TestRegistry(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	b, err := fxelection.NewBackend(ctxT(t), "memcached", fxelection.Settings{"addr": srv.Addr(), "prefix": "reg.", "timeout": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	closer, ok := b.(io.Closer)
	if !ok {
		t.Fatal("registry backend does not implement io.Closer")
	}
	if fxelection.BackendName(b) != "memcached" {
		t.Fatalf("name = %q", fxelection.BackendName(b))
	}
	e := electionName(t)
	c := cachetest.Start(t, b, e, "reg", nil)
	cachetest.WaitLeader(t, []*cachetest.Candidate{c}, cachetest.LeaderLimit)
	if _, err := newClient(t, srv.Addr()).Get("reg." + e); err != nil {
		t.Fatalf("lease key with prefix reg.: %v", err)
	}
	if err := c.E.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrySettingsErrors: bad settings give errors naming the setting;
// the adapter never echoes an address.
func TestRegistrySettingsErrors(t *testing.T) {
	const value = "value-never-echoed"
	cases := []struct {
		s    fxelection.Settings
		want string
	}{
		{fxelection.Settings{}, `"addr"`},
		{fxelection.Settings{"addr": " , "}, `"addr"`},
		{fxelection.Settings{"addr": value}, `"addr"`},
		{fxelection.Settings{"addr": "h:1", "timeout": "soon"}, `"timeout"`}, // the core's getter quotes it
		{fxelection.Settings{"addr": "h:1", "timeout": "0s"}, `"timeout"`},
		{fxelection.Settings{"addr": "127.0.0.1:1", "prefix": "a b"}, `"prefix"`},
		{fxelection.Settings{"addr": "127.0.0.1:1", "prefix": strings.Repeat("p", 200)}, `"prefix"`},
	}
	for _, tc := range cases {
		_, err := fxelection.NewBackend(ctxT(t), "memcached", tc.s)
		if err == nil {
			t.Errorf("%v: no error", tc.s)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q does not name %s", err, tc.want)
		}
		if strings.Contains(err.Error(), value) {
			t.Errorf("error %q echoes the setting's value", err)
		}
	}
}

// TestModule: the fx module builds the Backend from the app's client (and
// optional Options), an elector campaigns with it, and app stop releases.
func TestModule(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	var e *fxelection.Elector
	var cb *cachelease.Backend
	app := fxtest.New(t,
		fx.Provide(func() *memcache.Client { return newClient(t, srv.Addr()) }),
		fx.Supply(cachelease.Options{KeyPrefix: "fx."}),
		Module,
		fx.Supply(fxelection.Config{Name: "fx-module", LeaseDuration: cachetest.Lease, RenewDeadline: cachetest.Renew, RetryPeriod: cachetest.Retry}),
		fxelection.Module,
		fx.Populate(&e, &cb),
	)
	app.RequireStart()
	cachetest.WaitUntil(t, cachetest.LeaderLimit, "the fx elector to lead", e.IsLeader)
	if k := cb.Key("fx-module"); k != "fx.fx-module" {
		t.Fatalf("Options from the graph not used: %s", k)
	}
	if e.BackendName() != "memcached" {
		t.Fatalf("backend name %q", e.BackendName())
	}
	app.RequireStop()
	if _, err := newBackend(t, srv.Addr(), cachelease.Options{KeyPrefix: "fx."}).Get(ctxT(t), "fx-module"); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("lease after fx stop: %v, want released", err)
	}
}
