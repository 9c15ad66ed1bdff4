// Package moduletest holds test helpers for the backends' configuration
// modules (fxelection/config): decoding one module object through a whole
// document, checking that bad settings give errors naming their JSON path
// without secrets, and provisioning a module the way the config package's
// life cycle does.
package moduletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// BackendPath is the JSON path of the module object in the documents Decode
// builds.
const BackendPath = "elections[0].backend"

// Decode parses (strictly, with Validate) a document with one election
// whose backend is the module object settings (JSON text), and returns the
// decoded module. Placeholders are resolved with env.
func Decode(settings string, env map[string]string) (config.BackendModule, error) {
	doc, err := EnvLoader(env).Parse([]byte(`{"elections": [{"name": "e", "backend": ` + settings + `}]}`))
	if err != nil {
		return nil, err
	}
	return doc.Elections[0].Backend.Module, nil
}

// Case is one bad module object and what its error must say.
type Case struct {
	// Settings is the module object, in JSON.
	Settings string
	// Want are substrings of the error, such as the JSON path
	// "elections[0].backend.addr" or, for errors from the module's
	// Validate, "elections[0].backend: " and the setting's key.
	Want []string
	// Is, if set, must match the error with errors.Is.
	Is error
}

// CheckErrors decodes every case, requiring an error that contains each of
// its Want strings, matches Is, and contains none of secrets. env resolves
// placeholders.
func CheckErrors(t *testing.T, env map[string]string, cases []Case, secrets ...string) {
	t.Helper()
	for _, c := range cases {
		_, err := Decode(c.Settings, env)
		if err == nil {
			t.Errorf("%s: no error", c.Settings)
			continue
		}
		for _, w := range c.Want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.Settings, err, w)
			}
		}
		if c.Is != nil && !errors.Is(err, c.Is) {
			t.Errorf("%s: error %q does not match %v", c.Settings, err, c.Is)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q contains a secret", c.Settings, err)
			}
		}
	}
}

// Provision provisions m as the config package does when an app starts
// (Provision if implemented, then Backend) and returns its Backend, or the
// error (after Cleanup, as the config package does). A successful
// module's Cleanup runs when the test ends, unless the test called the
// returned cleanup first.
func Provision(t testing.TB, ctx context.Context, m config.BackendModule) (b fxelection.Backend, cleanup func() error, err error) {
	t.Helper()
	var once bool
	cleanup = func() error {
		if once {
			return nil
		}
		once = true
		if c, ok := m.(config.CleanerUpper); ok {
			return c.Cleanup()
		}
		return nil
	}
	if p, ok := m.(config.Provisioner); ok {
		if err := p.Provision(config.Context{Context: ctx}); err != nil {
			return nil, nil, errors.Join(err, cleanup())
		}
	}
	b, err = m.Backend()
	if err != nil {
		return nil, nil, errors.Join(err, cleanup())
	}
	t.Cleanup(func() {
		if err := cleanup(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return b, cleanup, nil
}

// ProvisionSettings decodes settings (JSON values; the "module" key is set
// to moduleID) as one module object, validates it and provisions it (see
// Provision) with ctx.
func ProvisionSettings(t testing.TB, ctx context.Context, moduleID string, settings map[string]any) (b fxelection.Backend, cleanup func() error, err error) {
	t.Helper()
	settings["module"] = moduleID
	raw, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(string(raw), nil)
	if err != nil {
		return nil, nil, err
	}
	return Provision(t, ctx, m)
}

// At is a Case's Want for an error that names the JSON path of the module
// object's setting key, as decoding reports it.
func At(key string) []string { return []string{BackendPath + "." + key} }

// Validated is a Case's Want for an error from the module's Validate:
// the module object's path, then text naming the setting (the key and
// what follows it in the module's message, such as "bucket:").
func Validated(setting string) []string { return []string{BackendPath + ": ", setting} }

// MustProvision decodes settings (see Decode; no placeholders), requires a
// module of type M whose backend is named name (backendkit.NamedBackend),
// and provisions it (see Provision) with ctx, failing t on any error.
func MustProvision[M config.BackendModule](t testing.TB, ctx context.Context, settings, name string) (M, fxelection.Backend, func() error) {
	t.Helper()
	decoded, err := Decode(settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := decoded.(M)
	if !ok {
		t.Fatalf("decoded %T", decoded)
	}
	b, cleanup, err := Provision(t, ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := b.(backendkit.NamedBackend); !ok || n.BackendName() != name {
		t.Fatalf("backend %T is not named %q", b, name)
	}
	return m, b, cleanup
}

// CheckCleanupCloses runs a provisioned module's cleanup and checks that
// its backend b no longer reaches the store (a Get fails), as it must once
// the client the module built is closed.
func CheckCleanupCloses(t testing.TB, ctx context.Context, b fxelection.Backend, cleanup func() error) {
	t.Helper()
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "x"); err == nil {
		t.Fatal("Get after Cleanup succeeded: the client was not closed")
	}
}

// RunConfigFile parses the configuration file path with l, runs it as an
// fx app (without fx's log) until every election it names has a leader,
// each within limit, stops the app, checks that no elector still leads,
// and returns the document, for the caller to check the store.
func RunConfigFile(t *testing.T, l config.Loader, path string, limit time.Duration) *config.Document {
	t.Helper()
	doc, err := l.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := config.Build(doc)
	if err != nil {
		t.Fatal(err)
	}
	var all struct {
		fx.In
		Electors []*fxelection.Elector `group:"fxelection.electors"`
	}
	app := fxtest.New(t, fx.NopLogger, opt, fx.Populate(&all))
	app.RequireStart()
	if len(all.Electors) == 0 || len(all.Electors) != len(doc.Elections) {
		t.Fatalf("%d electors for %d elections", len(all.Electors), len(doc.Elections))
	}
	for _, e := range all.Electors {
		electiontesting.WaitFor(t, limit, e.Status().Election+" to lead", e.IsLeader)
	}
	app.RequireStop()
	for _, e := range all.Electors {
		if e.IsLeader() {
			t.Errorf("%s still leads after stop", e.Status().Election)
		}
	}
	return doc
}

// Document returns a configuration document with one election, with
// electiontesting's fault timing, whose backend object is the module moduleID
// with settings (JSON members after the module key, each with a leading
// comma, or "").
func Document(election, moduleID, settings string) []byte {
	return fmt.Appendf(nil, `{"elections": [{"name": %q, "lease_duration": %q, "renew_deadline": %q,
		"retry_period": %q, "max_backoff": %q, "backend": {"module": %q%s}}]}`,
		election, electiontesting.FaultLease, electiontesting.FaultRenew, electiontesting.FaultRetry, electiontesting.FaultMaxBackoff, moduleID, settings)
}

// CheckRegistered checks that moduleID is registered, with a doc string.
func CheckRegistered(t *testing.T, moduleID string) {
	t.Helper()
	info, err := config.GetModule(config.ModuleID(moduleID))
	if err != nil || info.Doc == "" {
		t.Fatalf("GetModule = %+v, %v", info, err)
	}
}

// CheckDecodeHides decodes settings (a module object, values as Go
// values; fuzz input) and checks that it either decodes to a module of
// type M or fails with an error that does not contain secret. Settings
// that JSON cannot represent are skipped.
func CheckDecodeHides[M config.BackendModule](t *testing.T, settings map[string]any, secret string) {
	t.Helper()
	raw, err := json.Marshal(settings)
	if err != nil {
		return // not representable as JSON: nothing to decode
	}
	m, err := Decode(string(raw), nil)
	if err == nil {
		if _, ok := m.(M); !ok {
			t.Fatalf("decoded %T", m)
		}
		return
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error %q shows the secret", err)
	}
}

// EnvLoader returns a Loader whose placeholders {env.NAME} read env.
func EnvLoader(env map[string]string) config.Loader {
	return config.Loader{LookupEnv: func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}}
}

// CheckConfigFileReleases runs the configuration file path with the
// environment env (RunConfigFile, each election leading within
// electiontesting.LeaderLimit), then checks through probe (called after the
// app stopped: a Backend on the same store, with the file's options) that
// every election's lease was released, and that without the variable
// required the file fails with config.ErrPlaceholder.
func CheckConfigFileReleases(t *testing.T, path string, env map[string]string, required string, probe func() fxelection.Backend) {
	t.Helper()
	doc := RunConfigFile(t, EnvLoader(env), path, electiontesting.LeaderLimit)
	p := probe()
	for _, e := range doc.Elections {
		if _, err := p.Get(electiontesting.Context(t), e.Name); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("%s after stop: %v, want released", e.Name, err)
		}
	}
	without := maps.Clone(env)
	delete(without, required)
	if _, err := EnvLoader(without).ParseFile(path); !errors.Is(err, config.ErrPlaceholder) {
		t.Fatalf("without %s: %v, want ErrPlaceholder", required, err)
	}
}

// CheckFxModule runs an fx app of a backend package's fx module and what
// it needs (backend: the app's client, Options, fx.Populate targets) with
// fxelection.Module electing election on electiontesting's fault timing:
// the elector must lead on a Backend named backendName. After the app
// stops, probe (a Backend on the same store with the same options) must
// find the lease released.
func CheckFxModule(t *testing.T, election, backendName string, probe func() fxelection.Backend, backend ...fx.Option) {
	t.Helper()
	var e *fxelection.Elector
	app := fxtest.New(t, fx.Options(backend...),
		fx.Supply(fxelection.Config{Name: election, Timing: fxelection.Timing{LeaseDuration: electiontesting.FaultLease, RenewDeadline: electiontesting.FaultRenew, RetryPeriod: electiontesting.FaultRetry}}),
		fxelection.Module,
		fx.Populate(&e),
	)
	app.RequireStart()
	electiontesting.WaitFor(t, electiontesting.LeaderLimit, "the fx elector to lead", e.IsLeader)
	if got := e.Status().Backend; got != backendName {
		t.Fatalf("backend name %q, want %q", got, backendName)
	}
	app.RequireStop()
	if _, err := probe().Get(electiontesting.Context(t), election); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("lease after fx stop: %v, want released", err)
	}
}

// CheckFxModuleNeedsOptions checks that a backend package's fx module,
// given the app's client (client, fx options supplying it), fails without
// Options, with an error naming their type (the type of emptyOptions, such
// as "s3lease.Options"), and with emptyOptions, with an error matching
// want.
func CheckFxModuleNeedsOptions(t *testing.T, module, client fx.Option, emptyOptions any, want error) {
	t.Helper()
	typeName := fmt.Sprintf("%T", emptyOptions)
	use := fx.Invoke(func(fxelection.Backend) {})
	if err := fx.New(fx.NopLogger, client, module, use).Err(); err == nil || !strings.Contains(err.Error(), typeName) {
		t.Fatalf("module without Options: %v, want an error naming %s", err, typeName)
	}
	if err := fx.New(fx.NopLogger, client, fx.Supply(emptyOptions), module, use).Err(); !errors.Is(err, want) {
		t.Fatalf("module with empty Options: %v, want %v", err, want)
	}
}
