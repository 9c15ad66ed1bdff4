package zklease

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/testserver"
)

const secret = "s3cr3t-PASSWORD-never-shown"

func serversJSON(t testing.TB, addrs ...string) string {
	b, err := json.Marshal(addrs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfigModule: fxelection.backends.zookeeper decodes its settings,
// provisions a connection of its own, campaigns with it, and Cleanup
// closes the connection. (The session timeout is above the default
// renew_deadline, 10s, of the document moduletest decodes the module in.)
func TestConfigModule(t *testing.T) {
	addr := server(t)
	moduletest.CheckRegistered(t, "fxelection.backends.zookeeper")
	m, b, cleanup := moduletest.MustProvision[*ConfigModule](t, ctxT(t), `{"module": "fxelection.backends.zookeeper", "servers": `+serversJSON(t, addr)+`,
		"prefix": "/reg", "push": false, "session_timeout": "11s"}`, "zookeeper")
	if got, _ := b.(*Backend).RenewDeadlineLimit(); got != 11*time.Second || got != m.sessionTimeout() {
		t.Errorf("the Backend's session timeout %v, want session_timeout's", got)
	}
	if b.(*Backend).push {
		t.Error(`"push": false did not disable push`)
	}
	e := electionName(t)
	cand := electiontesting.StartCandidate(t, b, e, "reg", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{cand}, leaderLimit)
	admin := dial(t, testSession, addr)
	if kids, _, err := admin.Children("/reg/" + escapeName(e)); err != nil || len(kids) != 1 {
		t.Errorf("lease znode under /reg/%s: %v, %v", e, kids, err)
	}
	if err := cand.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	moduletest.CheckCleanupCloses(t, ctxT(t), b, cleanup)
}

// TestConfigModuleDefaults: absent settings give the documented defaults.
func TestConfigModuleDefaults(t *testing.T) {
	// A server that answers: a connection to an address where something
	// else listens would wait in its handshake, after Close, for up to ten
	// times two thirds of the session timeout.
	m, b, cleanup := moduletest.MustProvision[*ConfigModule](t, ctxT(t), `{"module": "fxelection.backends.zookeeper", "servers": `+serversJSON(t, server(t))+`}`, "zookeeper")
	defer func() { _ = cleanup() }()
	zb := b.(*Backend)
	if !zb.push || zb.prefix != DefaultPrefix || m.sessionTimeout() != DefaultSessionTimeout {
		t.Fatalf("defaults: push=%v prefix=%q session=%v", zb.push, zb.prefix, m.sessionTimeout())
	}
	if len(zb.acl) != 1 || zb.acl[0].Scheme != "world" {
		t.Fatalf("default ACL %+v, want world", zb.acl)
	}
}

// TestConfigModuleErrors: bad settings give errors naming the JSON path
// (decoding) or the setting (Validate), and the password never appears in
// an error.
func TestConfigModuleErrors(t *testing.T) {
	env := map[string]string{"ZK_PASSWORD": secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.zookeeper", "username": "app", "password": "{env.ZK_PASSWORD}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(``), Want: moduletest.At("servers"), Is: config.ErrRequired},
		{Settings: obj(`, "servers": []`), Want: moduletest.At("servers"), Is: config.ErrRequired},
		{Settings: obj(`, "server": ["h:1"]`), Want: moduletest.At("server"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "servers": "h:1"`), Want: moduletest.At("servers"), Is: config.ErrWrongType},
		{Settings: obj(`, "servers": [" "]`), Want: moduletest.Validated("servers"), Is: ErrInvalidOptions},
		{Settings: obj(`, "servers": ["no-port"]`), Want: moduletest.Validated("servers"), Is: ErrInvalidOptions},
		{Settings: obj(`, "servers": ["h:1", "u:` + secret + `@h:1"]`), Want: moduletest.Validated("server 2"), Is: ErrInvalidOptions},
		{Settings: obj(`, "servers": ["h:1"], "session_timeout": "10ms"`), Want: moduletest.Validated("session_timeout"), Is: ErrInvalidOptions},
		{Settings: obj(`, "servers": ["h:1"], "session_timeout": "1h"`), Want: moduletest.Validated("session_timeout"), Is: ErrInvalidOptions},
		{Settings: obj(`, "servers": ["h:1"], "session_timeout": 5`), Want: moduletest.At("session_timeout"), Is: config.ErrWrongType},
		{Settings: obj(`, "servers": ["h:1"], "push": "false"`), Want: moduletest.At("push"), Is: config.ErrWrongType},
		{Settings: obj(`, "servers": ["h:1"], "prefix": "a/b"`), Want: moduletest.Validated("prefix"), Is: ErrInvalidOptions},
		{Settings: obj(`, "servers": ["h:1"], "prefix": "/a//b"`), Want: moduletest.Validated("prefix"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.zookeeper", "servers": ["h:1"], "password": "{env.ZK_PASSWORD}"}`, Want: moduletest.Validated("username"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.zookeeper", "servers": ["h:1"], "username": "app"}`, Want: moduletest.Validated("password"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.zookeeper", "servers": ["h:1"], "username": "a:b", "password": "{env.ZK_PASSWORD}"}`, Want: moduletest.Validated("username"), Is: ErrInvalidOptions},
		{Settings: `{"module": "fxelection.backends.zookeeper", "servers": ["h:1"], "password": 5}`, Want: moduletest.At("password"), Is: config.ErrWrongType},
	}, secret)
}

// TestOptionsValidateBothPaths: the plain constructor and the module share
// Options.Validate, so they refuse the same prefixes.
func TestOptionsValidateBothPaths(t *testing.T) {
	conn := dial(t, testSession, server(t))
	for _, prefix := range []string{"a", "/", "/a/", "//a", "/a/./b", "/a/..", "/a\x00", "/\x1b[31m", "/\xff", "/é", "/a\tb", "/zookeeper", "/zookeeper/x", "/" + strings.Repeat("p", maxPrefixLen)} {
		if _, err := New(conn, Options{Prefix: prefix}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options.Prefix") {
			t.Errorf("New with prefix %q: %v, want ErrInvalidOptions naming Options.Prefix", prefix, err)
		}
		m := &ConfigModule{Servers: []string{"h:1"}, Prefix: prefix}
		if err := m.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("module with prefix %q: %v, want ErrInvalidOptions naming prefix", prefix, err)
		}
	}
	for _, prefix := range []string{"", "/app", "/a/b:c/d", "/zookeeper2", "/a.b/c"} {
		if _, err := New(conn, Options{Prefix: prefix}); err != nil {
			t.Errorf("New with prefix %q: %v", prefix, err)
		}
		if err := (&ConfigModule{Servers: []string{"h:1"}, Prefix: prefix}).Validate(); err != nil {
			t.Errorf("module with prefix %q: %v", prefix, err)
		}
	}
	if _, err := New(nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New(nil): %v, want ErrInvalidOptions", err)
	}
}

// TestConfigModuleAuth: with username and password the module's
// connection authenticates (digest) and the znodes it creates are readable
// by that user only; a connection without the credentials cannot read or
// take them, and no error shows the password.
func TestConfigModuleAuth(t *testing.T) {
	addr := server(t)
	prefix := "/auth-" + escapeName(electionName(t))
	m, err := moduletest.Decode(`{"module": "fxelection.backends.zookeeper", "servers": `+serversJSON(t, addr)+`,
		"username": "billing", "password": "{env.PW}", "prefix": "`+prefix+`"}`, map[string]string{"PW": secret})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := moduletest.Provision(t, ctxT(t), m)
	if err != nil {
		t.Fatal(err)
	}
	e := electionName(t)
	cand := electiontesting.StartCandidate(t, b, e, "auth", nil)
	electiontesting.WaitLeader(t, []*electiontesting.Candidate{cand}, leaderLimit)

	stranger := newBackend(t, Options{Prefix: prefix}, addr)
	_, err = stranger.Get(ctxT(t), e)
	if !backendkit.IsStoreFailure(err) || !strings.Contains(err.Error(), "not authenticated") || strings.Contains(err.Error(), secret) {
		t.Fatalf("Get without credentials: %v, want a refusal by the ACL", err)
	}
	if _, err := stranger.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "x", Duration: time.Second}); !backendkit.IsStoreFailure(err) {
		t.Fatalf("Acquire without credentials: %v, want a refusal by the ACL", err)
	}
	if err := cand.Elector.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get with the credentials after stop: %v, want ErrNoLease", err)
	}
}

// TestModule: the fx module builds the Backend from the app's connection
// (and optional Options) and an elector campaigns with it; stopping the
// app releases the lease and closes the Backend, not the connection.
func TestModule(t *testing.T) {
	addr := server(t)
	conn := dial(t, testSession, addr)
	var zb *Backend
	moduletest.CheckFxModule(t, "fx-module", "zookeeper", func() fxelection.Backend {
		return newBackend(t, Options{Prefix: "/fx"}, addr)
	}, fx.Supply(conn), fx.Supply(Options{Prefix: "/fx"}), Module, fx.Populate(&zb))
	if zb.Prefix() != "/fx" {
		t.Fatalf("Options from the graph not used: %s", zb.Prefix())
	}
	if _, _, err := conn.Exists("/fx"); err != nil {
		t.Fatalf("the app's connection was closed by the module: %v", err)
	}
	if cancel := zb.Subscribe("x", func() {}); cancel != nil {
		cancel() // after Close: a no-op
	}
	if len(zb.watches) != 0 {
		t.Fatal("Subscribe after the app stopped started a watch")
	}
}

// FuzzConfigModuleSettings: whatever servers and prefix a document holds,
// decoding and validating the module never panics, and no error shows the
// password.
func FuzzConfigModuleSettings(f *testing.F) {
	f.Add("zk-0", ":2181", "/app")
	f.Add("", "@h:1", "/x\x00")
	f.Add("u", "@[::1]:2181/0", "")
	f.Add("zk", ":2181?x=1", "\xff")
	f.Fuzz(func(t *testing.T, before, after, prefix string) {
		const pw = "Fz-pw-7d21"
		moduletest.CheckDecodeHides[*ConfigModule](t, map[string]any{
			"module": "fxelection.backends.zookeeper", "servers": []string{"h:1", before + pw + after}, "prefix": prefix, "username": "user", "password": pw,
		}, pw)
	})
}

// TestExampleConfig: examples/configs/zookeeper.json, its server and
// password from ZK_SERVER and ZK_PASSWORD, runs as an fx app with digest
// authentication: the election gets a leader, and stopping the app
// releases it (checked through a connection with the same credentials,
// which the lease znodes' ACL requires). Without ZK_PASSWORD the file does
// not load. It has a ZooKeeper of its own: the file's default prefix,
// created with the ACL "auth", would refuse the other tests.
func TestExampleConfig(t *testing.T) {
	addr := testserver.NewZooKeeper(t, testserver.ZooKeeperOptions{}).Addr()
	moduletest.CheckConfigFileReleases(t, "../../examples/configs/zookeeper.json",
		map[string]string{"ZK_SERVER": addr, "ZK_PASSWORD": secret}, "ZK_PASSWORD",
		func() fxelection.Backend {
			conn := dial(t, testSession, addr)
			if err := conn.AddAuth("digest", []byte("billing:"+secret)); err != nil {
				t.Fatal(err)
			}
			b, err := New(conn, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b
		})
}
