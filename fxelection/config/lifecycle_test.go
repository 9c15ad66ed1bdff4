package config_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
)

// Fast timings for fake time.
const timing = `"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms"`

// electors collects every elector through the group metrics and health use.
type electors struct {
	fx.In
	All []*fxelection.Elector `group:"fxelection.electors"`
}

// recordReleases journals every successful release, so tests can see that
// electors released their leases before their modules were cleaned up.
func recordReleases(j *journal) fx.Option {
	return fx.Invoke(func(es electors) {
		for _, e := range es.All {
			e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
				if ev.Kind == fxelection.EventOperation && ev.Op == backendkit.OpRelease && ev.Err == nil {
					j.add("release %s", ev.Election)
				}
			}))
		}
	})
}

func probeIn(journal, tag, settings string) string {
	if settings != "" {
		settings = ", " + settings
	}
	return `{"module": "fxelection.backends.probe", "journal": "` + journal + `", "tag": "` + tag + `"` + settings + `}`
}

func TestLifecycleOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		opt, err := config.Load([]byte(`{
			"backends": {"shared": ` + probeIn(t.Name(), "s", "") + `},
			"elections": [
				{"name": "a", "backend": "shared", ` + timing + `},
				{"name": "b", "backend": "shared", ` + timing + `},
				{"name": "c", "backend": ` + probeIn(t.Name(), "i", "") + `, ` + timing + `}
			]}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := j.events(), []string{"s:validate", "i:validate"}; !slices.Equal(got, want) {
			t.Fatalf("after Load: %v, want %v", got, want)
		}
		var es electors
		app := fxtest.New(t, fx.NopLogger, opt, recordReleases(j), fx.Populate(&es))
		if got := j.events(); len(got) != 2 {
			t.Fatalf("constructing the app provisioned something: %v", got)
		}
		app.RequireStart()
		synctest.Wait()
		for _, e := range es.All {
			if !e.IsLeader() {
				t.Errorf("%s: not leader", e.Status().Election)
			}
		}
		app.RequireStop()
		want := []string{
			"s:validate", "i:validate",
			"s:provision", "s:backend", "i:provision", "i:backend",
			"release c", "i:cleanup", "release b", "release a", "s:cleanup",
		}
		if got := j.events(); !slices.Equal(got, want) {
			t.Fatalf("life cycle:\n got %v\nwant %v", got, want)
		}
	})
}

func TestFailedStartCleansUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bad      string // settings of the second module
		extra    fx.Option
		wantErr  string
		wantLast []string
	}{
		{"provision fails", `"fail_provision": true, "password": "{env.PW}"`, nil,
			"elections[1].backend: fxelection.backends.probe provision: dial: auth with password=xxxxx for  refused",
			[]string{"ok:provision", "ok:backend", "bad:provision", "bad:cleanup", "ok:cleanup"}},
		{"provision fails echoing a literal secret", `"fail_provision": true, "password": "` + secret + `"`, nil,
			"elections[1].backend: fxelection.backends.probe provision: dial: auth with password=xxxxx",
			[]string{"ok:provision", "ok:backend", "bad:provision", "bad:cleanup", "ok:cleanup"}},
		{"provision fails echoing a DSN", `"fail_provision": true, "dsn": "postgres://app:{env.PW}@db"`, nil,
			"postgres://xxxxx@db refused",
			[]string{"ok:provision", "ok:backend", "bad:provision", "bad:cleanup", "ok:cleanup"}},
		{"backend fails", `"fail_backend": true`, nil,
			"elections[1].backend: fxelection.backends.probe backend: no backend today",
			[]string{"ok:provision", "ok:backend", "bad:provision", "bad:backend", "bad:cleanup", "ok:cleanup"}},
		{"cleanup after failed provision fails too", `"fail_provision": true, "fail_cleanup": true`, nil,
			"elections[1].backend: fxelection.backends.probe cleanup: cleanup refused",
			[]string{"ok:provision", "ok:backend", "bad:provision", "bad:cleanup", "ok:cleanup"}},
		{"a later hook fails", ``,
			fx.Invoke(func(lc fx.Lifecycle) {
				lc.Append(fx.Hook{OnStart: func(context.Context) error { return errors.New("later hook failed") }})
			}),
			"later hook failed",
			[]string{"ok:provision", "ok:backend", "bad:provision", "bad:backend", "bad:cleanup", "ok:cleanup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			j := journalFor(t.Name())
			l := config.Loader{LookupEnv: env(map[string]string{"PW": secret})}
			opt, err := l.Load([]byte(doc(
				`{"name": "a", "backend": `+probeIn(t.Name(), "ok", "")+`}`,
				`{"name": "b", "backend": `+probeIn(t.Name(), "bad", tc.bad)+`}`)))
			if err != nil {
				t.Fatal(err)
			}
			opts := []fx.Option{fx.NopLogger, opt}
			if tc.extra != nil {
				opts = append(opts, tc.extra)
			}
			app := fx.New(opts...)
			err = app.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), secret) {
				t.Fatalf("start error = %v, want %q", err, tc.wantErr)
			}
			got := j.events()
			if !slices.Equal(got[2:], tc.wantLast) {
				t.Fatalf("life cycle:\n got %v\nwant [validate validate] %v", got, tc.wantLast)
			}
		})
	}
}

func TestCleanupErrorOnStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	opt, err := config.Load([]byte(doc(`{"name": "a", "backend": ` + probeIn(t.Name(), "p", `"fail_cleanup": true`) + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	app := fx.New(fx.NopLogger, opt)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = app.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "elections[0].backend: fxelection.backends.probe cleanup: cleanup refused") {
		t.Fatalf("stop error = %v", err)
	}
}

func TestOptionsBelongToOneApp(t *testing.T) {
	opt, err := config.Load([]byte(doc(`{"name": "a", "backend": ` + mem + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	first := fx.New(fx.NopLogger, opt)
	if err := first.Err(); err != nil {
		t.Fatal(err)
	}
	second := fx.New(fx.NopLogger, opt)
	if err := second.Err(); err == nil || !strings.Contains(err.Error(), "used in two fx apps") {
		t.Fatalf("second app: %v", err)
	}
}

func TestNotProvisionedBackend(t *testing.T) {
	// An elector from the document, used before the app starts: its backend
	// operations fail with ErrNotProvisioned instead of touching anything.
	opt, err := config.Load([]byte(doc(`{"name": "a", "backend": ` + mem + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	var e *fxelection.Elector
	app := fx.New(fx.NopLogger, opt, fx.Populate(fx.Annotate(&e, fx.ParamTags(`name:"a"`))))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if e.Status().Backend != "memory" {
		t.Errorf("BackendName = %q, want memory (the module ID's name)", e.Status().Backend)
	}
	if _, err := e.TryAcquire(context.Background()); err == nil {
		t.Error("TryAcquire on a stopped elector: no error")
	}
}

// TestThreeElectionsOnMemory: a document with three elections on the
// memory module elects a leader in each, provides them by name and in the
// group, and releases every lease on stop.
func TestThreeElectionsOnMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		opt, err := config.Load([]byte(`{
			"backends": {"mem": {"module": "fxelection.backends.memory"}},
			"elections": [
				{"name": "billing", "identity": "node-1", "backend": {"module": "fxelection.backends.memory"}, ` + timing + `},
				{"name": "reports", "identity": "node-1", "metadata": {"addr": "10.0.0.7:8080"}, "backend": "mem", ` + timing + `},
				{"name": "mail", "identity": "node-1", "backend": "mem", ` + timing + `}
			]}`))
		if err != nil {
			t.Fatal(err)
		}
		var es electors
		var reports *fxelection.Elector
		app := fxtest.New(t, fx.NopLogger, opt, recordReleases(j), fx.Populate(&es),
			fx.Populate(fx.Annotate(&reports, fx.ParamTags(`name:"reports"`))))
		app.RequireStart()
		synctest.Wait()
		if len(es.All) != 3 {
			t.Fatalf("group has %d electors, want 3", len(es.All))
		}
		for _, e := range es.All {
			l, ok := e.Lease()
			if !ok || l.Holder != "node-1" || l.Term == 0 {
				t.Errorf("%s: not leader (%+v)", e.Status().Election, l)
			}
		}
		if l, _ := reports.Leader(); l.Metadata["addr"] != "10.0.0.7:8080" {
			t.Errorf("reports leader metadata = %v", l.Metadata)
		}
		app.RequireStop()
		got := j.events()
		slices.Sort(got)
		if want := []string{"release billing", "release mail", "release reports"}; !slices.Equal(got, want) {
			t.Fatalf("released %v, want %v", got, want)
		}
		for _, e := range es.All {
			if e.IsLeader() {
				t.Errorf("%s still leader after stop", e.Status().Election)
			}
		}
	})
}

// TestSharedMemoryCandidates: two candidates for one election in one
// process share a memory backend through a backends entry: exactly one
// leads, and the other takes over when the first resigns.
func TestSharedMemoryCandidates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opt, err := config.Load([]byte(`{
			"backends": {"mem": {"module": "fxelection.backends.memory"}},
			"elections": [
				{"name": "jobs", "fx_name": "jobs-1", "identity": "one", "backend": "mem", ` + timing + `},
				{"name": "jobs", "fx_name": "jobs-2", "identity": "two", "backend": "mem", ` + timing + `}
			]}`))
		if err != nil {
			t.Fatal(err)
		}
		var es electors
		app := fxtest.New(t, fx.NopLogger, opt, fx.Populate(&es))
		app.RequireStart()
		synctest.Wait()
		var leaders []*fxelection.Elector
		for _, e := range es.All {
			if e.IsLeader() {
				leaders = append(leaders, e)
			}
		}
		if len(leaders) != 1 {
			t.Fatalf("%d leaders, want 1", len(leaders))
		}
		if err := leaders[0].Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, e := range es.All {
			if e != leaders[0] && !e.IsLeader() {
				t.Errorf("%s did not take over after the leader resigned", e.Status().Identity)
			}
		}
		app.RequireStop()
	})
}

func TestExtensions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		opt, err := config.Load([]byte(`{
			"elections": [{"name": "b", "backend": ` + mem + `}, {"name": "a", "backend": ` + mem + `}],
			"extensions": [{"module": "fxelection.extensions.census", "journal": "` + t.Name() + `"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		app := fxtest.New(t, fx.NopLogger, opt)
		app.RequireStart()
		app.RequireStop()
		if got := j.events(); !slices.Equal(got, []string{"census a,b"}) {
			t.Fatalf("extension saw %v", got)
		}
	})
	for _, tc := range []struct{ ext, want string }{
		{`{"module": "fxelection.extensions.census", "journal": "x", "jounral": 1}`, `extensions[0].jounral: unknown key (did you mean "journal"?)`},
		{`{"module": "fxelection.extensions.census"}`, `extensions[0].journal: required`},
		{`{"journal": "x"}`, `extensions[0].module: required`},
		{`{"module": "fxelection.backends.memory"}`, `extensions[0].module: unknown module: the module is not in namespace fxelection.extensions`},
		{`"census"`, `extensions[0]: wrong type: want a module object, got string`},
		{`{"module": "fxelection.extensions.census", "journal": "x", "fail": true}`, `extensions[0]: fxelection.extensions.census: census refused`},
	} {
		_, err := config.Load([]byte(`{"elections": [{"name": "a", "backend": ` + mem + `}], "extensions": [` + tc.ext + `]}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.ext, err, tc.want)
		}
	}
	// An extension where a backend belongs.
	_, err := config.Parse([]byte(doc(`{"name": "a", "backend": {"module": "fxelection.extensions.census", "journal": "x"}}`)))
	if err == nil || !strings.Contains(err.Error(), `elections[0].backend.module: unknown module: the module is not in namespace fxelection.backends`) {
		t.Errorf("extension as backend: %v", err)
	}
}

func TestNestedModules(t *testing.T) {
	wrap := func(j, inner string) string {
		return `{"module": "fxelection.backends.wrap", "journal": "` + j + `", "inner": ` + inner + `}`
	}
	t.Run("life cycle", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		synctest.Test(t, func(t *testing.T) {
			j := journalFor(t.Name())
			opt, err := config.Load([]byte(doc(`{"name": "a", ` + timing + `, "backend": ` + wrap(t.Name(), probeIn(t.Name(), "in", "")) + `}`)))
			if err != nil {
				t.Fatal(err)
			}
			var e *fxelection.Elector
			app := fxtest.New(t, fx.NopLogger, opt, recordReleases(j), fx.Populate(fx.Annotate(&e, fx.ParamTags(`name:"a"`))))
			app.RequireStart()
			synctest.Wait()
			if !e.IsLeader() {
				t.Error("not leader through the nested module")
			}
			app.RequireStop()
			want := []string{"in:validate", "wrap:provision", "in:provision", "in:backend", "wrap:backend", "release a", "wrap:cleanup", "in:cleanup"}
			if got := j.events(); !slices.Equal(got, want) {
				t.Fatalf("life cycle:\n got %v\nwant %v", got, want)
			}
		})
	})
	t.Run("nested provision fails", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		j := journalFor(t.Name())
		l := config.Loader{LookupEnv: env(map[string]string{"PW": secret})}
		opt, err := l.Load([]byte(doc(`{"name": "a", "backend": ` + wrap(t.Name(), probeIn(t.Name(), "in", `"fail_provision": true, "password": "{env.PW}"`)) + `}`)))
		if err != nil {
			t.Fatal(err)
		}
		app := fx.New(fx.NopLogger, opt)
		err = app.Start(context.Background())
		if err == nil || strings.Contains(err.Error(), secret) ||
			!strings.Contains(err.Error(), "elections[0].backend: fxelection.backends.wrap provision: inner: nested fxelection.backends.probe provision: dial: auth with password=xxxxx") {
			t.Fatalf("start error = %v", err)
		}
		want := []string{"in:validate", "wrap:provision", "in:provision", "wrap:cleanup", "in:cleanup"}
		if got := j.events(); !slices.Equal(got, want) {
			t.Fatalf("life cycle:\n got %v\nwant %v", got, want)
		}
	})
	for _, tc := range []struct{ backend, want string }{
		{wrap("x", `{"module": "fxelection.backends.probe", "journal": "x", "tga": "t"}`), `elections[0].backend.inner.tga: unknown key (did you mean "tag"?)`},
		{wrap("x", `{"module": "fxelection.backends.probe", "journal": "x"}`), `elections[0].backend.inner.tag: required`},
		{wrap("x", probeIn("x", "t", `"fail_validate": true`)), `elections[0].backend.inner: fxelection.backends.probe: password  and dsn  rejected`},
		{wrap("x", `"shared"`), `elections[0].backend.inner: wrong type: a nested backend must be a module object`},
		{`{"module": "fxelection.backends.wrap", "journal": "x"}`, `elections[0].backend.inner: required`},
		{`{"module": "fxelection.backends.wrap", "journal": "x", "inner": ` + mem + `, "spare": {"module": "fxelection.backends.memory", "x": 1}}`, `elections[0].backend.spare.x: unknown key`},
	} {
		_, err := config.Parse([]byte(doc(`{"name": "a", "backend": ` + tc.backend + `}`)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.backend, err, tc.want)
		}
	}
}
