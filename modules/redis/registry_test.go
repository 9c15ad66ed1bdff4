package redislease

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/testserver"
)

const secret = "s3cr3t-PASSWORD-never-shown"

// TestRegistry: "redis" builds a working backend that owns its client.
func TestRegistry(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	if _, ok := fxelection.LookupBackend("redis"); !ok {
		t.Fatal(`"redis" is not registered`)
	}
	b, err := fxelection.NewBackend(ctxT(t), "redis", fxelection.Settings{
		"addr": srv.Addr(), "db": "3", "prefix": "reg:", "sequential_terms": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	closer, ok := b.(io.Closer)
	if !ok {
		t.Fatal("registry backend does not implement io.Closer")
	}
	if fxelection.BackendName(b) != "redis" {
		t.Fatalf("name = %q", fxelection.BackendName(b))
	}
	c := startCandidate(t, b, electionName(t), "reg", nil)
	_, l := waitLeader(t, []*candidate{c}, leaderLimit)
	if l.Term != 1 {
		t.Errorf("sequential_terms: term %d, want 1", l.Term)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 3})
	defer admin.Close()
	if keys, _ := admin.Keys(ctxT(t), "reg:{*").Result(); len(keys) != 2 {
		t.Errorf("keys in db 3 with prefix reg: = %v, want lease and term", keys)
	}
	if err := c.e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), "x"); err == nil {
		t.Fatal("Get after Close succeeded: the client was not closed")
	}
}

// TestRegistrySettingsErrors: bad settings give errors naming the setting,
// and the password never appears in an error.
func TestRegistrySettingsErrors(t *testing.T) {
	cases := []struct {
		s    fxelection.Settings
		want string
	}{
		{fxelection.Settings{"password": secret}, `"addr"`},
		{fxelection.Settings{"addr": " , ", "password": secret}, `"addr"`},
		{fxelection.Settings{"addr": "no-port", "password": secret}, `"addr"`},
		{fxelection.Settings{"addr": "h:1", "db": "x", "password": secret}, `"db"`},
		{fxelection.Settings{"addr": "h:1", "db": "-1", "password": secret}, `"db"`},
		{fxelection.Settings{"addr": "h:1,h:2", "db": "1", "password": secret}, `"db"`},
		{fxelection.Settings{"addr": "h:1", "tls": "maybe", "password": secret}, `"tls"`},
		{fxelection.Settings{"addr": "h:1", "push": "maybe", "password": secret}, `"push"`},
		{fxelection.Settings{"addr": "h:1", "sequential_terms": "2", "password": secret}, `"sequential_terms"`},
		{fxelection.Settings{"addr": "h:1", "prefix": "a{b}", "password": secret}, `"prefix"`},
	}
	for _, tc := range cases {
		_, err := fxelection.NewBackend(ctxT(t), "redis", tc.s)
		if err == nil {
			t.Errorf("%v: no error", tc.s)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q does not name %s", err, tc.want)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q contains the password", err)
		}
	}
}

// TestRegistryWrongPassword: a server that requires a password refuses a
// wrong one; the elector's error events never contain it.
func TestRegistryWrongPassword(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	if err := admin.ConfigSet(ctxT(t), "requirepass", "the-right-one").Err(); err != nil {
		t.Fatal(err)
	}
	b, err := fxelection.NewBackend(ctxT(t), "redis", fxelection.Settings{"addr": srv.Addr(), "password": secret})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(io.Closer).Close()
	var errs []error
	c := startCandidate(t, b, electionName(t), "pw", func(cfg *fxelection.Config) {
		cfg.Callbacks.OnError = func(err error) { errs = append(errs, err) } // one delivery goroutine
	})
	ev := c.w.waitFor(t, 20*time.Second, "a failed acquisition", isStoreFailure)
	if strings.Contains(ev.Err.Error(), secret) {
		t.Fatalf("error %q contains the password", ev.Err)
	}
	if err := c.e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("OnError %q contains the password", err)
		}
	}
	if st := c.e.Status(); st.LastError == nil || strings.Contains(st.LastError.Error(), secret) {
		t.Fatalf("Status.LastError = %v", st.LastError)
	}
	b2, err := fxelection.NewBackend(ctxT(t), "redis", fxelection.Settings{"addr": srv.Addr(), "password": "the-right-one"})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.(io.Closer).Close()
	if _, err := b2.Get(ctxT(t), "x"); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("Get with the right password: %v", err)
	}
}

// TestModule: the fx module builds the Backend from the app's client (and
// optional Options) and an elector campaigns with it.
func TestModule(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	var e *fxelection.Elector
	var rb *Backend
	app := fxtest.New(t,
		fx.Provide(func(lc fx.Lifecycle) redis.UniversalClient {
			c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr()}, ContextTimeoutEnabled: true})
			lc.Append(fx.StopHook(c.Close))
			return c
		}),
		fx.Supply(Options{KeyPrefix: "fx:"}),
		Module,
		fx.Supply(fxelection.Config{Name: "fx-module", LeaseDuration: faultLease, RenewDeadline: faultRenew, RetryPeriod: faultRetry}),
		fxelection.Module,
		fx.Populate(&e, &rb),
	)
	app.RequireStart()
	testserver.WaitFor(t, leaderLimit, "the fx elector to lead", e.IsLeader)
	if lease, _ := rb.Keys("fx-module"); !strings.HasPrefix(lease, "fx:") {
		t.Fatalf("Options from the graph not used: %s", lease)
	}
	if e.BackendName() != "redis" {
		t.Fatalf("backend name %q", e.BackendName())
	}
	app.RequireStop()
	if _, err := New(newClient(t, srv.Addr()), Options{KeyPrefix: "fx:"}).Get(ctxT(t), "fx-module"); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("lease after fx stop: %v, want released", err)
	}
}
