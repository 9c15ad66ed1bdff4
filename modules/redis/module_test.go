package redislease

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/testserver"
)

const secret = "s3cr3t-PASSWORD-never-shown"

// TestConfigModule: fxelection.backends.redis decodes its settings,
// provisions a client of its own, campaigns with it, and Cleanup closes
// the client.
func TestConfigModule(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	_, b, cleanup := moduletest.MustProvision[*ConfigModule](t, ctxT(t), `{"module": "fxelection.backends.redis", "addr": "`+srv.Addr()+`",
		"db": 3, "prefix": "reg:", "push": false}`, "redis")
	if b.(*Backend).push {
		t.Error(`"push": false did not disable push`)
	}
	c := electiontesting.StartCandidate(t, b, electionName(t), "reg", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{c}, electiontesting.LeaderLimit)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 3})
	defer admin.Close()
	if keys, _ := admin.Keys(ctxT(t), "reg:{*").Result(); len(keys) != 2 {
		t.Errorf("keys in db 3 with prefix reg: = %v, want lease and term", keys)
	}
	if err := c.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	moduletest.CheckCleanupCloses(t, ctxT(t), b, cleanup)
}

// TestConfigModuleDefaults: absent settings give the documented defaults.
func TestConfigModuleDefaults(t *testing.T) {
	_, b, _ := moduletest.MustProvision[*ConfigModule](t, ctxT(t), `{"module": "fxelection.backends.redis", "addr": "localhost:1"}`, "redis")
	rb := b.(*Backend)
	if !rb.push || rb.prefix != DefaultKeyPrefix {
		t.Fatalf("defaults: push=%v prefix=%q", rb.push, rb.prefix)
	}
}

// TestConfigModuleErrors: bad settings give errors naming the JSON path
// (decoding) or the setting under the module's path (Validate), and the
// password never appears in an error.
func TestConfigModuleErrors(t *testing.T) {
	env := map[string]string{"REDIS_PASSWORD": secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.redis", "password": "{env.REDIS_PASSWORD}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(``), Want: moduletest.At("addr"), Is: config.ErrRequired},
		{Settings: obj(`, "addr": ""`), Want: moduletest.At("addr"), Is: config.ErrRequired},
		{Settings: obj(`, "adr": "h:1"`), Want: moduletest.At("adr"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "addr": 6379`), Want: moduletest.At("addr"), Is: config.ErrWrongType},
		{Settings: obj(`, "addr": " , "`), Want: moduletest.Validated("addr"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "no-port"`), Want: moduletest.Validated("addr"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "redis://u:` + secret + `@h:1"`), Want: moduletest.Validated("addr: address 1 is a URL"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "u:` + secret + `@h:1"`), Want: moduletest.Validated("addr"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "h:1", "db": "x"`), Want: moduletest.At("db"), Is: config.ErrWrongType},
		{Settings: obj(`, "addr": "h:1", "db": 1.5`), Want: moduletest.At("db"), Is: config.ErrWrongType},
		{Settings: obj(`, "addr": "h:1", "db": -1`), Want: moduletest.Validated("db"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "h:1", "db": 16`), Want: moduletest.Validated("db: must be between 0 and 15"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "h:1,h:2", "db": 1`), Want: moduletest.Validated("db"), Is: ErrInvalidOptions},
		{Settings: obj(`, "addr": "h:1", "tls": "maybe"`), Want: moduletest.At("tls"), Is: config.ErrWrongType},
		{Settings: obj(`, "addr": "h:1", "push": "false"`), Want: moduletest.At("push"), Is: config.ErrWrongType},
		{Settings: obj(`, "addr": "h:1", "prefix": "a{b}"`), Want: moduletest.Validated("prefix"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.redis", "addr": "h:1", "password": 5}`, Want: moduletest.At("password"), Is: config.ErrWrongType},
	}, secret)
}

// TestOptionsValidateBothPaths: the plain constructor and the module share
// Options.Validate, so they refuse the same prefixes.
func TestOptionsValidateBothPaths(t *testing.T) {
	for _, prefix := range []string{"a{b}", "{", "x}"} {
		if _, err := New(nil, Options{KeyPrefix: prefix}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options.KeyPrefix") {
			t.Errorf("New with prefix %q: %v, want ErrInvalidOptions naming Options.KeyPrefix", prefix, err)
		}
		if err := (Options{KeyPrefix: prefix}).Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Validate with prefix %q: %v", prefix, err)
		}
		m := &ConfigModule{Addr: "h:1", Prefix: prefix}
		if err := m.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("module with prefix %q: %v, want ErrInvalidOptions naming prefix", prefix, err)
		}
	}
	for _, prefix := range []string{"", "app:", "a:b/c:"} {
		if _, err := New(nil, Options{KeyPrefix: prefix}); err != nil {
			t.Errorf("New with prefix %q: %v", prefix, err)
		}
		if err := (&ConfigModule{Addr: "h:1", Prefix: prefix}).Validate(); err != nil {
			t.Errorf("module with prefix %q: %v", prefix, err)
		}
	}
}

// TestConfigModuleWrongPassword: a server that requires a password refuses
// a wrong one; the elector's error events never contain it.
func TestConfigModuleWrongPassword(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	if err := admin.ConfigSet(ctxT(t), "requirepass", "the-right-one").Err(); err != nil {
		t.Fatal(err)
	}
	start := func(pw string) fxelection.Backend {
		t.Helper()
		m, err := moduletest.Decode(`{"module": "fxelection.backends.redis", "addr": "`+srv.Addr()+`", "password": "{env.PW}"}`,
			map[string]string{"PW": pw})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := moduletest.Provision(t, ctxT(t), m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := start(secret)
	var errs []error
	c := electiontesting.StartCandidate(t, b, electionName(t), "pw", func(cfg *fxelection.Config) {
		cfg.Callbacks.OnError = func(err error) { errs = append(errs, err) } // one delivery goroutine
	})
	ev := c.Events.WaitFor(t, electiontesting.Eventually, "a failed acquisition", electiontesting.IsStoreFailure)
	if strings.Contains(ev.Err.Error(), secret) {
		t.Fatalf("error %q contains the password", ev.Err)
	}
	if err := c.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("OnError %q contains the password", err)
		}
	}
	if st := c.Elector.Status(); st.LastError == nil || strings.Contains(st.LastError.Error(), secret) {
		t.Fatalf("Status.LastError = %v", st.LastError)
	}
	if _, err := start("the-right-one").Get(ctxT(t), "x"); !errors.Is(err, backendkit.ErrNoLease) {
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
		fx.Supply(fxelection.Config{Name: "fx-module", LeaseDuration: electiontesting.FaultLease, RenewDeadline: electiontesting.FaultRenew, RetryPeriod: electiontesting.FaultRetry}),
		fxelection.Module,
		fx.Populate(&e, &rb),
	)
	app.RequireStart()
	electiontesting.WaitFor(t, electiontesting.LeaderLimit, "the fx elector to lead", e.IsLeader)
	if lease, _ := rb.Keys("fx-module"); !strings.HasPrefix(lease, "fx:") {
		t.Fatalf("Options from the graph not used: %s", lease)
	}
	if e.Status().Backend != "redis" {
		t.Fatalf("backend name %q", e.Status().Backend)
	}
	app.RequireStop()
	if _, err := mustNew(t, newClient(t, srv.Addr()), Options{KeyPrefix: "fx:"}).Get(ctxT(t), "fx-module"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("lease after fx stop: %v, want released", err)
	}
}

// FuzzConfigModuleSettings: whatever addr, prefix and db a document holds,
// decoding and validating the module never panics, and no error shows the
// password or the user info pasted into addr.
func FuzzConfigModuleSettings(f *testing.F) {
	f.Add("redis://", "@127.0.0.1:6379", "app:", int64(0))
	f.Add("", "@h:1,h:2", "{x}", int64(3))
	f.Add("u", "@[::1]:6379/0", "", int64(-1))
	f.Add("rediss://app", "@redis.example:6380?x=1", "a}", int64(1<<40))
	f.Fuzz(func(t *testing.T, before, after, prefix string, db int64) {
		const pw = "Fz-pw-7d21"
		addr := before + ":" + pw + after
		moduletest.CheckDecodeHides[*ConfigModule](t, map[string]any{
			"module": "fxelection.backends.redis", "addr": addr, "prefix": prefix, "db": db, "password": pw,
		}, pw)
	})
}
