package etcdlease

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

const secret = "s3cr3t-PASSWORD-never-shown"

// endpointsJSON is c's endpoints as a JSON array.
func endpointsJSON(t testing.TB, eps []string) string {
	b, err := json.Marshal(eps)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfigModule: fxelection.backends.etcd decodes its settings,
// provisions a client of its own, campaigns with it, and Cleanup closes
// the client.
func TestConfigModule(t *testing.T) {
	c := sharedCluster(t)
	_, b, cleanup := moduletest.MustProvision[*ConfigModule](t, ctxT(t), `{"module": "fxelection.backends.etcd", "endpoints": `+endpointsJSON(t, c.Endpoints())+`,
		"prefix": "reg/", "push": false, "dial_timeout": "3s"}`, "etcd")
	if b.(*Backend).push {
		t.Error(`"push": false did not disable push`)
	}
	e := electionName(t)
	cand := electiontesting.StartCandidate(t, b, e, "reg", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{cand}, leaderLimit)
	admin := c.Client(t)
	if resp, err := admin.Get(ctxT(t), "reg/"+e); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("key reg/%s: %v, %v", e, resp, err)
	}
	if err := cand.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	moduletest.CheckCleanupCloses(t, ctxT(t), b, cleanup)
}

// TestConfigModuleDefaults: absent settings give the documented defaults.
func TestConfigModuleDefaults(t *testing.T) {
	_, b, _ := moduletest.MustProvision[*ConfigModule](t, ctxT(t), `{"module": "fxelection.backends.etcd", "endpoints": ["localhost:1"]}`, "etcd")
	eb := b.(*Backend)
	if !eb.push || eb.prefix != DefaultKeyPrefix {
		t.Fatalf("defaults: push=%v prefix=%q", eb.push, eb.prefix)
	}
	if eb.client.Ctx() == nil {
		t.Fatal("no client")
	}
}

// TestConfigModuleErrors: bad settings give errors naming the JSON path
// (decoding) or the setting under the module's path (Validate), and the
// password never appears in an error.
func TestConfigModuleErrors(t *testing.T) {
	env := map[string]string{"ETCD_PASSWORD": secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.etcd", "username": "app", "password": "{env.ETCD_PASSWORD}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(``), Want: moduletest.At("endpoints"), Is: config.ErrRequired},
		{Settings: obj(`, "endpoints": []`), Want: moduletest.At("endpoints"), Is: config.ErrRequired},
		{Settings: obj(`, "endpoint": ["h:1"]`), Want: moduletest.At("endpoint"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "endpoints": "h:1"`), Want: moduletest.At("endpoints"), Is: config.ErrWrongType},
		{Settings: obj(`, "endpoints": [" "]`), Want: moduletest.Validated("endpoints"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["no-port"]`), Want: moduletest.Validated("endpoints"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["http://u:` + secret + `@h:1"]`), Want: moduletest.Validated("endpoints: endpoint 1 has user info"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["h:1", "u:` + secret + `@h:1"]`), Want: moduletest.Validated("endpoint 2"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["unix://` + secret + `"]`), Want: moduletest.Validated("scheme"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["http://h:1/x?` + secret + `"]`), Want: moduletest.Validated("path or query"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["http://h:1"], "tls": true`), Want: moduletest.Validated("http:// but TLS"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["https://h:1", "http://h:2"]`), Want: moduletest.Validated("endpoint 2"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["h:1"], "dial_timeout": "-1s"`), Want: moduletest.Validated("dial_timeout"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["h:1"], "dial_timeout": 5`), Want: moduletest.At("dial_timeout"), Is: config.ErrWrongType},
		{Settings: obj(`, "endpoints": ["h:1"], "cert_file": "c.pem"`), Want: moduletest.Validated("key_file"), Is: ErrInvalidOptions},
		{Settings: obj(`, "endpoints": ["h:1"], "push": "false"`), Want: moduletest.At("push"), Is: config.ErrWrongType},
		{Settings: obj(`, "endpoints": ["h:1"], "prefix": "a\nb"`), Want: moduletest.Validated("prefix"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.etcd", "endpoints": ["h:1"], "password": "{env.ETCD_PASSWORD}"}`, Want: moduletest.Validated("username"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.etcd", "endpoints": ["h:1"], "username": "app"}`, Want: moduletest.Validated("password"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.etcd", "endpoints": ["h:1"], "password": 5}`, Want: moduletest.At("password"), Is: config.ErrWrongType},
	}, secret)
}

// TestOptionsValidateBothPaths: the plain constructor and the module share
// Options.Validate, so they refuse the same prefixes.
func TestOptionsValidateBothPaths(t *testing.T) {
	client := etcdtest.NewClient(t, "localhost:1")
	// The rule for names: a format character (U+200B) or a tab is refused too.
	for _, prefix := range []string{"a\x00", "\x1b[31m", "\xff", "a\u200bb", "a\tb", strings.Repeat("p", maxPrefixLen+1)} {
		if p := backendkit.NameProblem(prefix); len(prefix) <= backendkit.MaxNameLen && p == "" {
			t.Errorf("prefix %q: election names accept it, the test expects the shared rule to refuse it", prefix)
		}
		if _, err := New(client, Options{KeyPrefix: prefix}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options.KeyPrefix") {
			t.Errorf("New with prefix %q: %v, want ErrInvalidOptions naming Options.KeyPrefix", prefix, err)
		}
		m := &ConfigModule{Endpoints: []string{"h:1"}, Prefix: prefix}
		if err := m.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("module with prefix %q: %v, want ErrInvalidOptions naming prefix", prefix, err)
		}
	}
	for _, prefix := range []string{"", "app/", "a:b/c:", "élection/"} {
		if _, err := New(client, Options{KeyPrefix: prefix}); err != nil {
			t.Errorf("New with prefix %q: %v", prefix, err)
		}
		if err := (&ConfigModule{Endpoints: []string{"h:1"}, Prefix: prefix}).Validate(); err != nil {
			t.Errorf("module with prefix %q: %v", prefix, err)
		}
	}
	if _, err := New(nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New(nil): %v, want ErrInvalidOptions", err)
	}
}

// TestConfigModuleAuth: on an etcd with authentication on, the module's
// client authenticates with username and password; a wrong password fails
// the start, and no error shows it.
func TestConfigModuleAuth(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	admin := c.Client(t)
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctxT(t), "root", secret); return err },
		func() error { _, err := admin.UserGrantRole(ctxT(t), "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctxT(t)); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	provision := func(pw string) (fxelection.Backend, error) {
		t.Helper()
		m, err := moduletest.Decode(`{"module": "fxelection.backends.etcd", "endpoints": `+endpointsJSON(t, c.Endpoints())+`,
			"username": "root", "password": "{env.PW}"}`, map[string]string{"PW": pw})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := moduletest.Provision(t, ctxT(t), m)
		return b, err
	}
	const wrong = "wrong-PASSWORD-never-shown"
	if _, err := provision(wrong); err == nil || strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), secret) {
		t.Fatalf("Provision with a wrong password: %v", err)
	}
	b, err := provision(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), "x"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get with the right password: %v", err)
	}
	cand := electiontesting.StartCandidate(t, b, electionName(t), "auth", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{cand}, leaderLimit)
	if err := cand.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestModule: the fx module builds the Backend from the app's client (and
// optional Options) and an elector campaigns with it; the client stays the
// app's.
func TestModule(t *testing.T) {
	c := sharedCluster(t)
	var e *fxelection.Elector
	var eb *Backend
	app := fxtest.New(t,
		// The test owns the client (closed when it ends), as an app would.
		fx.Provide(func() *clientv3.Client { return etcdtest.NewClient(t, c.Endpoints()...) }),
		fx.Supply(Options{KeyPrefix: "fx/"}),
		Module,
		fx.Supply(fxelection.Config{Name: "fx-module", Timing: fxelection.Timing{LeaseDuration: electiontesting.FaultLease, RenewDeadline: electiontesting.FaultRenew, RetryPeriod: electiontesting.FaultRetry}}),
		fxelection.Module,
		fx.Populate(&e, &eb),
	)
	app.RequireStart()
	electiontesting.WaitFor(t, leaderLimit, "the fx elector to lead", e.IsLeader)
	if k := eb.Key("fx-module"); k != "fx/fx-module" {
		t.Fatalf("Options from the graph not used: %s", k)
	}
	if e.Status().Backend != "etcd" {
		t.Fatalf("backend name %q", e.Status().Backend)
	}
	app.RequireStop()
	if _, err := newBackend(t, Options{KeyPrefix: "fx/"}, c.Endpoints()...).Get(ctxT(t), "fx-module"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("lease after fx stop: %v, want released", err)
	}
	if _, err := eb.Get(ctxT(t), "fx-module"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("the app's client was closed by the module: %v", err)
	}
}

// FuzzConfigModuleSettings: whatever endpoints and prefix a document holds,
// decoding and validating the module never panics, and no error shows the
// password or the user info pasted into an endpoint.
func FuzzConfigModuleSettings(f *testing.F) {
	f.Add("http://", "@127.0.0.1:2379", "app/")
	f.Add("", "@h:1", "x\x00")
	f.Add("u", "@[::1]:2379/0", "")
	f.Add("https://app", "@etcd.example:2379?x=1", "\xff")
	f.Fuzz(func(t *testing.T, before, after, prefix string) {
		const pw = "Fz-pw-7d21"
		ep := before + ":" + pw + after
		moduletest.CheckDecodeHides[*ConfigModule](t, map[string]any{
			"module": "fxelection.backends.etcd", "endpoints": []string{"h:1", ep}, "prefix": prefix, "username": "user", "password": pw,
		}, pw)
	})
}

// TestExampleConfig: examples/configs/etcd.json (which the README shows),
// its endpoint and password from ETCD_ENDPOINT and ETCD_PASSWORD, runs as
// an fx app on an etcd with authentication on, as the user billing whose
// role may read and write only the keys under fxelection/: the election
// gets a leader, and stopping the app releases it. Without ETCD_PASSWORD
// the file does not load.
func TestExampleConfig(t *testing.T) {
	const file = "../../examples/configs/etcd.json"
	c := etcdtest.Start(t, etcdtest.Options{})
	admin := c.Client(t)
	for _, step := range []func() error{
		func() error { _, err := admin.RoleAdd(ctxT(t), "billing"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctxT(t), "billing", "fxelection/", clientv3.GetPrefixRangeEnd("fxelection/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctxT(t), "billing", secret); return err },
		func() error { _, err := admin.UserGrantRole(ctxT(t), "billing", "billing"); return err },
		func() error { _, err := admin.UserAdd(ctxT(t), "root", secret); return err },
		func() error { _, err := admin.UserGrantRole(ctxT(t), "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctxT(t)); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"ETCD_ENDPOINT": c.Endpoints()[0], "ETCD_PASSWORD": secret}
	l := config.Loader{LookupEnv: func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}}
	doc := moduletest.RunConfigFile(t, l, file, leaderLimit)
	m, err := moduletest.Decode(`{"module": "fxelection.backends.etcd", "endpoints": `+endpointsJSON(t, c.Endpoints())+`,
		"username": "billing", "password": "{env.PW}", "dial_timeout": "1m"}`, map[string]string{"PW": secret})
	if err != nil {
		t.Fatal(err)
	}
	probe, _, err := moduletest.Provision(t, ctxT(t), m) // cleaned up when the test ends
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range doc.Elections {
		if _, err := probe.Get(ctxT(t), e.Name); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("%s after stop: %v, want released", e.Name, err)
		}
	}
	delete(env, "ETCD_PASSWORD")
	if _, err := l.ParseFile(file); !errors.Is(err, config.ErrPlaceholder) {
		t.Fatalf("without ETCD_PASSWORD: %v, want ErrPlaceholder", err)
	}
}
