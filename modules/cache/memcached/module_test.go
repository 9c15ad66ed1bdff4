package memcachedlease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

const moduleID = "fxelection.backends.memcached"

// TestModuleRegistered: importing the package registers the typed module.
func TestModuleRegistered(t *testing.T) { moduletest.CheckRegistered(t, moduleID) }

// TestModuleDecodeErrors: unknown keys, wrong types, missing required
// settings, bad durations and values Validate refuses are errors naming the
// JSON path or the setting; no error echoes a value.
func TestModuleDecodeErrors(t *testing.T) {
	const value = "value-never-echoed"
	cases := []struct {
		settings string
		want     string // in the error
		is       error
	}{
		{``, `elections[0].backend.addr: required`, config.ErrRequired},
		{`, "addr": ""`, `elections[0].backend.addr: required`, config.ErrRequired},
		{`, "addr": "h:1", "adr": "` + value + `"`, `elections[0].backend.adr`, config.ErrUnknownKey},
		{`, "addr": 11211`, `elections[0].backend.addr`, config.ErrWrongType},
		{`, "addr": "h:1", "timeout": 5`, `elections[0].backend.timeout`, config.ErrWrongType},
		{`, "addr": "h:1", "timeout": "soon-` + value + `"`, `elections[0].backend.timeout`, config.ErrInvalidValue},
		{`, "addr": "h:1", "prefix": ["` + value + `"]`, `elections[0].backend.prefix`, config.ErrWrongType},
		{`, "addr": " , "`, `addr: no address`, ErrInvalidSettings},
		{`, "addr": "` + value + `"`, `addr: address 1 is not host:port`, ErrInvalidSettings},
		{`, "addr": "h:1,` + value + `"`, `addr: address 2 is not host:port`, ErrInvalidSettings},
		{`, "addr": "memcached://` + value + `:11211"`, `addr: address 1 is a URL`, ErrInvalidSettings},
		{`, "addr": "h:1", "timeout": "-1s"`, `timeout: must not be negative`, ErrInvalidSettings},
		{`, "addr": "h:1", "prefix": "a b ` + value + `"`, `prefix: `, cachelease.ErrInvalidPrefix},
		{`, "addr": "h:1", "prefix": "` + strings.Repeat("p", 200) + `"`, `prefix: `, cachelease.ErrInvalidPrefix},
	}
	for _, tc := range cases {
		_, err := config.Parse(moduletest.Document("e", moduleID, tc.settings))
		if err == nil {
			t.Errorf("%s: no error", tc.settings)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("%s: error %q, want %q matching %v", tc.settings, err, tc.want, tc.is)
		}
		if !strings.HasPrefix(err.Error(), "elections[0].backend") {
			t.Errorf("%s: error %q does not start with the module's path", tc.settings, err)
		}
		if strings.Contains(err.Error(), value) {
			t.Errorf("%s: error %q echoes a value", tc.settings, err)
		}
	}
	if _, err := config.Parse(moduletest.Document("e", moduleID, `, "addr": "h:1, h:2", "timeout": "250ms", "prefix": "a.b_c="`)); err != nil {
		t.Fatalf("valid settings: %v", err)
	}
}

// TestModuleSharedValidation: New and the module refuse the same prefixes
// (both run cachelease.Options.Validate) and accept the same ones.
func TestModuleSharedValidation(t *testing.T) {
	client := memcache.New("127.0.0.1:1") // never dialled
	for _, p := range []string{"a b", ".x", "a..b", "a/b", "é", strings.Repeat("p", 200), "", "a", "a.b.", "x_y=z-"} {
		_, newErr := New(client, cachelease.Options{KeyPrefix: p})
		_, docErr := config.Parse(moduletest.Document("e", moduleID, fmt.Sprintf(`, "addr": "h:1", "prefix": %q`, p)))
		if (newErr == nil) != (docErr == nil) {
			t.Errorf("prefix %q: New: %v; module: %v", p, newErr, docErr)
		}
		if newErr != nil && (!errors.Is(newErr, cachelease.ErrInvalidPrefix) || !errors.Is(docErr, cachelease.ErrInvalidPrefix)) {
			t.Errorf("prefix %q: New: %v; module: %v; want ErrInvalidPrefix", p, newErr, docErr)
		}
	}
}

// TestModuleLifecycle: an fx app built from a document on a real memcached
// elects a leader with the module's client; app stop releases the lease,
// and Cleanup closes the client's connections. goleak (TestMain) checks
// that nothing is left running.
func TestModuleLifecycle(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	e := electionName(t)
	probe := newBackend(t, srv.Addr(), cachelease.Options{KeyPrefix: "cfg."})
	if _, err := probe.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("probe Get: %v", err) // also opens the probe's connection
	}
	before := connAddrs(t, srv.Addr())

	doc, err := config.Parse(moduletest.Document(e, moduleID, fmt.Sprintf(`, "addr": %q, "timeout": "2s", "prefix": "cfg."`, srv.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Elections[0].Backend.Module.(*ConfigModule)
	opt, err := config.Build(doc)
	if err != nil {
		t.Fatal(err)
	}
	var el *fxelection.Elector
	app := fxtest.New(t, fx.NopLogger, opt, fx.Populate(fx.Annotate(&el, fx.ParamTags(`name:"`+e+`"`))))
	if m.client != nil {
		t.Fatal("client created before the app started")
	}
	app.RequireStart()
	if m.client == nil || m.client.Timeout != 2*time.Second {
		t.Fatalf("Provision did not create the client with the timeout: %+v", m.client)
	}
	electiontesting.WaitFor(t, electiontesting.LeaderLimit, "the elector to lead", el.IsLeader)
	if el.Status().Backend != "memcached" {
		t.Fatalf("backend name %q", el.Status().Backend)
	}
	if _, err := probe.Get(ctxT(t), e); err != nil {
		t.Fatalf("lease with prefix cfg.: %v", err)
	}
	var mine []string // the module's client's connections
	for a := range connAddrs(t, srv.Addr()) {
		if !before[a] {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		t.Fatal("no connection of the module's client while leading")
	}
	client := m.client // kept reachable below, so that only Close (not the GC) closes its connections
	app.RequireStop()
	if _, err := m.Backend(); m.client != nil || err == nil {
		t.Fatal("Cleanup did not drop the client")
	}
	if _, err := probe.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("lease after app stop: %v, want released", err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the module's connections to close", func() bool {
		now := connAddrs(t, srv.Addr())
		for _, a := range mine {
			if now[a] {
				return false
			}
		}
		return true
	})
	runtime.KeepAlive(client)
}

// TestModuleCleanupWithoutProvision: Cleanup is safe on a module that was
// never (or only partly) provisioned, and Backend refuses before Provision.
func TestModuleCleanupWithoutProvision(t *testing.T) {
	m := &ConfigModule{Addr: "127.0.0.1:1"}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if b, err := m.Backend(); err == nil || b != nil {
		t.Fatalf("Backend before Provision = %v, %v", b, err)
	}
	if err := m.Provision(modkit.Context{Context: ctxT(t)}); err != nil {
		t.Fatal(err)
	}
	if b, err := m.Backend(); err != nil || b == nil {
		t.Fatalf("Backend = %v, %v", b, err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatalf("second Cleanup: %v", err)
	}
}

// TestFxModule: the fx module builds the Backend from the app's client (and
// optional Options), an elector campaigns with it, and app stop releases.
func TestFxModule(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	var cb *cachelease.Backend
	moduletest.CheckFxModule(t, "fx-module", "memcached",
		func() fxelection.Backend { return newBackend(t, srv.Addr(), cachelease.Options{KeyPrefix: "fx."}) },
		fx.Provide(func() *memcache.Client { return newClient(t, srv.Addr()) }),
		fx.Supply(cachelease.Options{KeyPrefix: "fx."}), Module, fx.Populate(&cb))
	if k := cb.Key("fx-module"); k != "fx.fx-module" {
		t.Fatalf("Options from the graph not used: %s", k)
	}
}

// connAddrs returns the client addresses of memcached's open connections
// ("stats conns"), but that of the connection it asks on.
func connAddrs(t *testing.T, addr string) map[string]bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("stats conns\r\n")); err != nil {
		t.Fatal(err)
	}
	self := "tcp:" + c.LocalAddr().String()
	out := map[string]bool{}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		line := sc.Text()
		if line == "END" {
			return out
		}
		// STAT <fd>:addr tcp:127.0.0.1:54321
		f := strings.Fields(line)
		if len(f) == 3 && strings.HasSuffix(f[1], ":addr") && f[2] != self {
			out[f[2]] = true
		}
	}
	t.Fatalf("stats conns: no END: %v", sc.Err())
	return nil
}

// TestExampleConfig: examples/configs/memcached.json, its addr from
// MEMCACHED_ADDR, runs as an fx app on a real memcached: every election
// gets a leader, and stopping the app releases them.
func TestExampleConfig(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	moduletest.CheckConfigFileReleases(t, "../../../examples/configs/memcached.json",
		map[string]string{"MEMCACHED_ADDR": srv.Addr()}, "MEMCACHED_ADDR",
		func() fxelection.Backend { return newBackend(t, srv.Addr(), cachelease.Options{KeyPrefix: "myapp."}) })
}

// TestModuleProvisionNoDNS: Provision does no I/O, DNS included (a name
// that does not resolve, with a cancelled context, still provisions: the
// client resolves names when it connects, and an election's server does
// not depend on what a name resolved to once); a host:port that is not
// one is refused by Validate without quoting it; Cleanup is always safe.
func TestModuleProvisionNoDNS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &ConfigModule{Addr: "127.0.0.1:1, never-resolved.invalid:11211"}
	if err := m.Provision(modkit.Context{Context: ctx}); err != nil {
		t.Fatalf("Provision with a name that does not resolve: %v", err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	m = &ConfigModule{Addr: "127.0.0.1:1, bad\x1bhost:11211"}
	err := m.Validate()
	if err == nil || !strings.Contains(err.Error(), "address 2") || strings.Contains(err.Error(), "bad") {
		t.Fatalf("Validate with a hostile host = %v", err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
}
