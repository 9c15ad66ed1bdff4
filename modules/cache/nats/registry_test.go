package natslease

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
	"github.com/fxelection/fxelection/modules/cache/internal/cachetest"
)

const secret = "s3cr3t-PASSWORD-never-shown"

// TestRegistry: "nats" builds a working backend that owns its connection
// and creates its bucket.
func TestRegistry(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	b, err := fxelection.NewBackend(ctxT(t), "nats", fxelection.Settings{
		"url": srv.URL(), "bucket": "reg", "prefix": "reg.",
	})
	if err != nil {
		t.Fatal(err)
	}
	closer, ok := b.(io.Closer)
	if !ok {
		t.Fatal("registry backend does not implement io.Closer")
	}
	if _, ok := b.(fxelection.Notifier); !ok {
		t.Fatal("registry backend does not implement Notifier")
	}
	if fxelection.BackendName(b) != "nats" {
		t.Fatalf("name = %q", fxelection.BackendName(b))
	}
	e := electionName(t)
	c := cachetest.Start(t, b, e, "reg", nil)
	cachetest.WaitLeader(t, []*cachetest.Candidate{c}, cachetest.LeaderLimit)
	kv, err := jsOf(t, connect(t, srv.URL())).KeyValue(ctxT(t), "reg")
	if err != nil {
		t.Fatalf("bucket not created: %v", err)
	}
	keys, err := kv.Keys(ctxT(t))
	if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0], "reg.") {
		t.Fatalf("keys in bucket reg = %v, %v; want one with prefix reg.", keys, err)
	}
	if err := c.E.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), "x"); err == nil {
		t.Fatal("Get after Close succeeded: the connection was not closed")
	}
}

// TestRegistrySettingsErrors: bad settings give errors naming the setting,
// and secrets never appear in an error.
func TestRegistrySettingsErrors(t *testing.T) {
	cases := []struct {
		s    fxelection.Settings
		want string
	}{
		{fxelection.Settings{"password": secret}, `"url"`},
		{fxelection.Settings{"url": " , ", "password": secret}, `"url"`},
		{fxelection.Settings{"url": "nats://h:1", "bucket": "a.b", "password": secret}, `"bucket"`},
		{fxelection.Settings{"url": "nats://h:1", "bucket": "a b", "token": secret}, `"bucket"`},
		{fxelection.Settings{"url": "nats://h:1", "replicas": "x", "password": secret}, `"replicas"`},
		{fxelection.Settings{"url": "nats://h:1", "replicas": "0", "password": secret}, `"replicas"`},
		{fxelection.Settings{"url": "nats://h:1", "replicas": "6", "password": secret}, `"replicas"`},
		{fxelection.Settings{"url": "nats://h:1", "push": "maybe", "password": secret}, `"push"`},
		{fxelection.Settings{"url": "nats://h:1", "prefix": "a..b", "password": secret}, `"prefix"`},
		{fxelection.Settings{"url": "nats://user:" + secret + "@h:1", "prefix": ".x"}, `"prefix"`},
	}
	for _, tc := range cases {
		_, err := fxelection.NewBackend(ctxT(t), "nats", tc.s)
		if err == nil {
			t.Errorf("%v: no error", tc.s)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q does not name %s", err, tc.want)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q contains the secret", err)
		}
	}
}

// TestRegistryCredentialsNeverShown: a server that requires a password
// refuses a wrong one, given as a setting or inside the URL; the elector's
// error events, OnError and Status never contain it. The right one works.
func TestRegistryCredentialsNeverShown(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{User: "app", Password: "the-right-one"})
	for name, s := range map[string]fxelection.Settings{
		"setting": {"url": srv.URL(), "username": "app", "password": secret},
		"url":     {"url": "nats://app:" + secret + "@" + srv.Addr()},
		"token":   {"url": srv.URL(), "token": secret},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := fxelection.NewBackend(ctxT(t), "nats", s)
			if err != nil {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q contains the secret", err)
				}
				return // refused at connect: fine, and redacted
			}
			defer b.(io.Closer).Close()
			var mu sync.Mutex
			var errs []error
			c := cachetest.Start(t, b, electionName(t), "pw", func(cfg *fxelection.Config) {
				cfg.Callbacks.OnError = func(err error) {
					mu.Lock()
					defer mu.Unlock()
					errs = append(errs, err)
				}
			})
			var ev fxelection.Event
			cachetest.WaitUntil(t, 20*time.Second, "a failed acquisition", func() bool {
				var ok bool
				ev, ok = c.W.Find(cachetest.IsStoreFailure)
				return ok
			})
			if strings.Contains(ev.Err.Error(), secret) {
				t.Fatalf("error %q contains the secret", ev.Err)
			}
			if err := c.E.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, err := range errs {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("OnError %q contains the secret", err)
				}
			}
			if st := c.E.Status(); st.LastError == nil || strings.Contains(st.LastError.Error(), secret) {
				t.Fatalf("Status.LastError = %v", st.LastError)
			}
		})
	}
	b, err := fxelection.NewBackend(ctxT(t), "nats", fxelection.Settings{"url": srv.URL(), "username": "app", "password": "the-right-one"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(io.Closer).Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.Get(ctxT(t), "x")
		if errors.Is(err, fxelection.ErrNoLease) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get with the right password: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestModule: the fx module builds the Backend from the app's bucket (and
// optional Options), an elector campaigns with it, and app stop releases.
func TestModule(t *testing.T) {
	srv, admin := newServer(t)
	var e *fxelection.Elector
	var cb *cachelease.Backend
	app := fxtest.New(t,
		fx.Provide(func() jetstream.KeyValue { return admin }),
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
	if e.BackendName() != "nats" {
		t.Fatalf("backend name %q", e.BackendName())
	}
	app.RequireStop()
	if _, err := newBackend(t, srv.URL(), cachelease.Options{KeyPrefix: "fx."}).Get(ctxT(t), "fx-module"); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("lease after fx stop: %v, want released", err)
	}
}
