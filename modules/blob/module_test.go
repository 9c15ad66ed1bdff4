package bloblease_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// secret is a syntactically valid (base64) but wrong account key.
const secret = "c3VwM3Itc2VjcmV0LWszeS1mb3ItdGVzdHM="

// provision decodes settings (the "module" key is added) as an
// fxelection.backends.blob module object, validates and provisions it. Its
// Cleanup runs when the test ends.
func provision(t testing.TB, settings map[string]any) (fxelection.Backend, error) {
	t.Helper()
	b, _, err := moduletest.ProvisionSettings(t, ctxT(t), "fxelection.backends.blob", settings)
	return b, err
}

// TestConfigModuleErrors: strict decoding and Validate name the JSON path
// or the setting, and never show the key.
func TestConfigModuleErrors(t *testing.T) {
	env := map[string]string{"KEY": secret, "BAD_KEY": "!!" + secret + "!!", "CS": "AccountName=a;AccountKey=" + secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.blob", "account_url": "http://127.0.0.1:1/devstoreaccount1", "account_name": "acct"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(`, "account_key": "{env.KEY}"`), Want: moduletest.At("container"), Is: config.ErrRequired},
		{Settings: obj(`, "account_key": "{env.KEY}", "container": 1`), Want: moduletest.At("container"), Is: config.ErrWrongType},
		{Settings: obj(`, "account_key": "{env.KEY}", "container": "c", "prefx": "p"`), Want: moduletest.At("prefx"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "container": "c"`), Want: moduletest.Validated("account_key:"), Is: config.ErrRequired},
		{Settings: `{"module": "fxelection.backends.blob", "account_name": "acct", "account_key": "{env.KEY}", "container": "c"}`, Want: moduletest.Validated("account_url:"), Is: config.ErrRequired},
		{Settings: `{"module": "fxelection.backends.blob", "account_url": "http://h/", "account_key": "{env.KEY}", "container": "c"}`, Want: moduletest.Validated("account_name:"), Is: config.ErrRequired},
		{Settings: `{"module": "fxelection.backends.blob", "container": "c"}`, Want: append(moduletest.Validated("account_url:"), "connection_string")},
		{Settings: obj(`, "account_key": "{env.BAD_KEY}", "container": "c"`), Want: moduletest.Validated("account_key:")},
		{Settings: `{"module": "fxelection.backends.blob", "account_url": "ftp://` + secret + `@host/", "account_name": "a", "account_key": "{env.KEY}", "container": "c"}`, Want: moduletest.Validated("account_url:")},
		{Settings: obj(`, "connection_string": "{env.CS}", "container": "c"`), Want: moduletest.Validated("connection_string:")},
		{Settings: obj(`, "account_key": 5, "container": "c"`), Want: moduletest.At("account_key"), Is: config.ErrWrongType},
	}, secret)
}

// TestConfigModuleBadConnectionString: a connection string the SDK refuses
// fails Provision naming the setting, without the key.
func TestConfigModuleBadConnectionString(t *testing.T) {
	_, err := provision(t, map[string]any{"container": "c", "connection_string": "AccountKey=" + secret + ";garbage"})
	if err == nil || !strings.Contains(err.Error(), "connection_string:") || strings.Contains(err.Error(), secret) {
		t.Fatalf("bad connection string: %v", err)
	}
}

// TestOptionsValidateBothPaths: New and the module share Options.Validate.
func TestOptionsValidateBothPaths(t *testing.T) {
	if err := (bloblease.Options{}).Validate(); !errors.Is(err, bloblease.ErrContainerRequired) {
		t.Fatalf("Options{}.Validate() = %v", err)
	}
	if _, err := bloblease.New(newClient(t), bloblease.Options{}); !errors.Is(err, bloblease.ErrContainerRequired) {
		t.Fatalf("New without a container: %v", err)
	}
	m := &bloblease.ConfigModule{ConnectionString: modkit.NewSecret("UseDevelopmentStorage=true")}
	if err := m.Validate(); !errors.Is(err, bloblease.ErrContainerRequired) {
		t.Fatalf("module without a container: %v", err)
	}
}

// TestConfigModule: the module provisions a client of its own (from an
// account or a connection string) that stores leases under the prefix; a
// wrong key gives store errors without it.
func TestConfigModule(t *testing.T) {
	srv := server(t)
	for name, s := range map[string]map[string]any{
		"account":           {"account_url": srv.ServiceURL(), "account_name": srv.AccountName(), "account_key": srv.AccountKey(), "container": container, "prefix": "reg/"},
		"connection_string": {"connection_string": srv.ConnectionString(), "container": container, "prefix": "reg/"},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := provision(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if b.(backendkit.NamedBackend).BackendName() != "blob" {
				t.Fatalf("name %q", b.(backendkit.NamedBackend).BackendName())
			}
			e := electiontesting.Election(t)
			l, err := b.Acquire(ctxT(t), req(e, "a", 15*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(ctxT(t), e); err != nil || got.Holder != "a" || got.Term != l.Term {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			bb := newClient(t).ServiceClient().NewContainerClient(container).NewBlobClient("reg/" + e)
			if _, err := bb.GetProperties(ctxT(t), nil); err != nil {
				t.Fatalf("blob not under the prefix: %v", err)
			}
		})
	}
	// A wrong key fails with a store error that does not contain it.
	bad, err := provision(t, map[string]any{
		"account_url": srv.ServiceURL(), "account_name": srv.AccountName(), "account_key": secret, "container": container,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Get(ctxT(t), electiontesting.Election(t))
	if err == nil || errors.Is(err, backendkit.ErrNoLease) || strings.Contains(err.Error(), secret) {
		t.Fatalf("Get with a wrong key: %v", err)
	}
}

func TestModule(t *testing.T) {
	c := newClient(t)
	var got fxelection.Backend
	var bb *bloblease.Backend
	app := fxtest.New(t,
		fx.Supply(c, bloblease.Options{Container: container}),
		bloblease.Module,
		fx.Populate(&got, &bb),
	)
	app.RequireStart().RequireStop()
	if got == nil || got != fxelection.Backend(bb) || bb.Container() != container {
		t.Fatalf("backend %v / %v", got, bb)
	}
	moduletest.CheckFxModuleNeedsOptions(t, bloblease.Module, fx.Supply(c), bloblease.Options{}, bloblease.ErrContainerRequired)
}
