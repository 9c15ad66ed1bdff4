package natslease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
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

const (
	moduleID = "fxelection.backends.nats"
	secret   = "s3cr3t-PASSWORD-never-shown"
)

// TestModuleRegistered: importing the package registers the typed module.
func TestModuleRegistered(t *testing.T) { moduletest.CheckRegistered(t, moduleID) }

// TestModuleDecodeErrors: unknown keys, wrong types, missing required
// settings and values Validate refuses are errors naming the JSON path or
// the setting; no error contains a secret, whether written in the document
// or substituted for a placeholder.
func TestModuleDecodeErrors(t *testing.T) {
	t.Setenv("FXE_TEST_NATS_PASSWORD", secret)
	const pw = `, "password": "{env.FXE_TEST_NATS_PASSWORD}"`
	cases := []struct {
		settings string
		want     string // in the error
		is       error
	}{
		{pw, `elections[0].backend.url: required`, config.ErrRequired},
		{`, "url": 4222` + pw, `elections[0].backend.url`, config.ErrWrongType},
		{`, "url": "nats://h:1", "pasword": "` + secret + `"`, `elections[0].backend.pasword: unknown key`, config.ErrUnknownKey},
		{`, "url": "nats://h:1", "password": 987654321`, `elections[0].backend.password`, config.ErrWrongType},
		{`, "url": "nats://h:1", "token": ["` + secret + `"]`, `elections[0].backend.token`, config.ErrWrongType},
		{`, "url": "nats://h:1", "replicas": "3"` + pw, `elections[0].backend.replicas`, config.ErrWrongType},
		{`, "url": "nats://h:1", "push": "false"` + pw, `elections[0].backend.push`, config.ErrWrongType},
		{`, "url": " , "` + pw, `url: no URL`, ErrInvalidSettings},
		{`, "url": "nats://h:1 nats://u:` + secret + `@h:2"`, `url: URL 1 contains white space`, ErrInvalidSettings},
		{`, "url": "nats://h:1", "replicas": 6` + pw, `replicas: must be 1 to 5`, ErrInvalidSettings},
		{`, "url": "nats://h:1", "replicas": -1` + pw, `replicas: must be 1 to 5`, ErrInvalidSettings},
		{`, "url": "nats://h:1", "bucket": "a.b"` + pw, `bucket: `, ErrBucketRequired},
		{`, "url": "nats://h:1", "bucket": "a b", "token": "` + secret + `"`, `bucket: `, ErrBucketRequired},
		{`, "url": "nats://h:1", "prefix": "a..b"` + pw, `prefix: `, cachelease.ErrInvalidPrefix},
		{`, "url": "nats://user:` + secret + `@h:1", "prefix": ".x"`, `prefix: `, cachelease.ErrInvalidPrefix},
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
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "987654321") {
			t.Errorf("%s: error %q contains a secret", tc.settings, err)
		}
	}
	doc, err := config.Parse(moduletest.Document("e", moduleID, `, "url": "nats://a:1, nats://b:2", "username": "app", "token": "t", "bucket": "b_1-x",
		"replicas": 3, "prefix": "p.", "push": false`+pw))
	if err != nil {
		t.Fatalf("valid settings: %v", err)
	}
	m := doc.Elections[0].Backend.Module.(*ConfigModule)
	if m.Password.Value() != secret || m.replicas() != 3 || !m.options().DisablePush {
		t.Fatalf("decoded %+v", m)
	}
	if out := fmt.Sprintf("%v %+v", doc, m); strings.Contains(out, secret) {
		t.Fatalf("printing the document shows the secret: %s", out)
	}
}

// TestModuleSharedValidation: the plain constructors and the module refuse
// the same bucket names (ValidBucket, run by NewBucketStore) and prefixes
// (cachelease.Options.Validate, run by New), and accept the same ones.
func TestModuleSharedValidation(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	js := jsOf(t, connect(t, srv.URL()))
	for _, bucket := range []string{"a.b", "a b", "a>", "é", strings.Repeat("b", 201), "b", "B_1-x", strings.Repeat("b", 200)} {
		_, plainErr := NewBucketStore(js, jetstream.KeyValueConfig{Bucket: bucket})
		_, docErr := config.Parse(moduletest.Document("e", moduleID, fmt.Sprintf(`, "url": "nats://h:1", "bucket": %q`, bucket)))
		if (plainErr == nil) != (docErr == nil) || plainErr != nil && (!errors.Is(plainErr, ErrBucketRequired) || !errors.Is(docErr, ErrBucketRequired)) {
			t.Errorf("bucket %q: NewBucketStore: %v; module: %v", bucket, plainErr, docErr)
		}
	}
	s, err := NewBucketStore(js, jetstream.KeyValueConfig{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".x", "a..b", "a>", "a*", "a b", "", "a", "a.b.", "x_y=z-"} {
		_, plainErr := backendOn(s, cachelease.Options{KeyPrefix: p})
		_, docErr := config.Parse(moduletest.Document("e", moduleID, fmt.Sprintf(`, "url": "nats://h:1", "prefix": %q`, p)))
		if (plainErr == nil) != (docErr == nil) || plainErr != nil && (!errors.Is(plainErr, cachelease.ErrInvalidPrefix) || !errors.Is(docErr, cachelease.ErrInvalidPrefix)) {
			t.Errorf("prefix %q: New: %v; module: %v", p, plainErr, docErr)
		}
	}
}

// TestModuleLifecycle: an fx app built from a document (password from a
// placeholder) on a real nats-server elects a leader with the module's
// connection, in the bucket it created; app stop releases the lease, and
// Cleanup closes the connection. goleak (TestMain) checks that nothing is
// left running.
func TestModuleLifecycle(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{User: "app", Password: secret})
	t.Setenv("FXE_TEST_NATS_PASSWORD", secret)
	e := electionName(t)
	doc, err := config.Parse(moduletest.Document(e, moduleID, fmt.Sprintf(`, "url": %q, "username": "app", "password": "{env.FXE_TEST_NATS_PASSWORD}",
		"bucket": "cfg", "replicas": 1, "prefix": "cfg."`, srv.URL())))
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
	if m.nc != nil {
		t.Fatal("connection made before the app started")
	}
	app.RequireStart()
	nc := m.nc
	if nc == nil {
		t.Fatal("Provision made no connection")
	}
	b, err := m.Backend()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(backendkit.Notifier); !ok {
		t.Fatal("the module's Backend does not implement Notifier")
	}
	electiontesting.WaitFor(t, electiontesting.LeaderLimit, "the elector to lead", el.IsLeader)
	if el.Status().Backend != "nats" {
		t.Fatalf("backend name %q", el.Status().Backend)
	}
	admin := connect(t, "nats://app:"+secret+"@"+srv.Addr())
	kv, err := jsOf(t, admin).KeyValue(ctxT(t), "cfg")
	if err != nil {
		t.Fatalf("bucket cfg not created: %v", err)
	}
	if _, err := kv.Get(ctxT(t), "cfg."+e); err != nil {
		t.Fatalf("lease key with prefix cfg.: %v", err)
	}
	app.RequireStop()
	if _, err := m.Backend(); m.nc != nil || err == nil {
		t.Fatal("Cleanup did not drop the connection")
	}
	if !nc.IsClosed() {
		t.Fatal("Cleanup did not close the connection")
	}
	if _, err := b.Get(ctxT(t), e); err == nil {
		t.Fatal("Get after Cleanup succeeded")
	}
	probe, err := New(kv, admin, cachelease.Options{KeyPrefix: "cfg."})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := probe.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("lease after app stop: %v, want released", err)
	}
}

// TestModuleCredentialsNeverShown: a server that requires a password
// refuses a wrong one, given as a setting, inside the URL or as a token,
// each from a placeholder; the failed start, or the elector's error events
// and Status, never contain it.
func TestModuleCredentialsNeverShown(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{User: "app", Password: "the-right-one"})
	t.Setenv("FXE_TEST_NATS_PASSWORD", secret)
	t.Setenv("FXE_TEST_NATS_URL", "nats://app:"+secret+"@"+srv.Addr())
	for name, settings := range map[string]string{
		"setting": fmt.Sprintf(`, "url": %q, "username": "app", "password": "{env.FXE_TEST_NATS_PASSWORD}"`, srv.URL()),
		"url":     `, "url": "{env.FXE_TEST_NATS_URL}"`,
		"token":   fmt.Sprintf(`, "url": %q, "token": "{env.FXE_TEST_NATS_PASSWORD}"`, srv.URL()),
	} {
		t.Run(name, func(t *testing.T) {
			e := electionName(t)
			opt, err := config.Load(moduletest.Document(e, moduleID, settings))
			if err != nil {
				t.Fatal(err)
			}
			var el *fxelection.Elector
			app := fx.New(fx.NopLogger, opt, fx.Populate(fx.Annotate(&el, fx.ParamTags(`name:"`+e+`"`))))
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			w := &electiontesting.Events{}
			el.AddObserver(w)
			if err := app.Start(ctxT(t)); err != nil {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("start error %q contains the secret", err)
				}
				t.Logf("refused at start: %v", err)
				return // fine, and redacted
			}
			var ev fxelection.Event
			electiontesting.WaitFor(t, electiontesting.Eventually, "a failed acquisition", func() bool {
				var ok bool
				ev, ok = w.Find(electiontesting.IsStoreFailure)
				return ok
			})
			if strings.Contains(ev.Err.Error(), secret) {
				t.Fatalf("event error %q contains the secret", ev.Err)
			}
			t.Logf("store failure: %v", ev.Err)
			if st := el.Status(); st.LastError == nil || strings.Contains(st.LastError.Error(), secret) {
				t.Fatalf("Status.LastError = %v", st.LastError)
			}
			if err := app.Stop(ctxT(t)); err != nil {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("stop error %q contains the secret", err)
				}
				t.Fatal(err)
			}
			for _, ev := range w.All() {
				if ev.Err != nil && strings.Contains(ev.Err.Error(), secret) {
					t.Fatalf("event error %q contains the secret", ev.Err)
				}
			}
		})
	}
}

// TestModuleCleanupWithoutProvision: Cleanup is safe on a module that was
// never provisioned, and twice; Backend refuses before Provision.
func TestModuleCleanupWithoutProvision(t *testing.T) {
	m := &ConfigModule{URL: modkit.NewSecret("nats://127.0.0.1:1")}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if b, err := m.Backend(); err == nil || b != nil {
		t.Fatalf("Backend before Provision = %v, %v", b, err)
	}
	if err := m.Provision(modkit.Context{Context: context.Background()}); err != nil {
		t.Fatal(err) // the connection is retried in the background
	}
	nc := m.nc
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatalf("second Cleanup: %v", err)
	}
	if !nc.IsClosed() {
		t.Fatal("connection not closed")
	}
}

// TestFxModule: the fx module builds the Backend from the app's bucket (and
// optional Options), an elector campaigns with it, and app stop releases.
func TestFxModule(t *testing.T) {
	srv, admin := newServer(t)
	var cb *cachelease.Backend
	moduletest.CheckFxModule(t, "fx-module", "nats",
		func() fxelection.Backend { return newBackend(t, srv.URL(), cachelease.Options{KeyPrefix: "fx."}) },
		fx.Provide(func() jetstream.KeyValue { return admin }),
		fx.Supply(cachelease.Options{KeyPrefix: "fx."}), Module, fx.Populate(&cb))
	if k := cb.Key("fx-module"); k != "fx.fx-module" {
		t.Fatalf("Options from the graph not used: %s", k)
	}
}

// TestExampleConfig: examples/configs/nats.json, its URL and password
// from NATS_URL and NATS_PASSWORD, runs as an fx app on a real nats-server
// that requires the password: the election gets a leader, and stopping the
// app releases it. Without NATS_PASSWORD the file does not load.
func TestExampleConfig(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{User: "fxelection", Password: secret})
	moduletest.CheckConfigFileReleases(t, "../../../examples/configs/nats.json",
		map[string]string{"NATS_URL": srv.URL(), "NATS_PASSWORD": secret}, "NATS_PASSWORD",
		func() fxelection.Backend {
			admin := connect(t, "nats://fxelection:"+secret+"@"+srv.Addr())
			kv, err := jsOf(t, admin).KeyValue(ctxT(t), DefaultBucket)
			if err != nil {
				t.Fatal(err)
			}
			probe, err := New(kv, admin, cachelease.Options{KeyPrefix: "myapp."})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = probe.Close() })
			return probe
		})
}
