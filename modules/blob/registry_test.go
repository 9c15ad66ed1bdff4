package bloblease_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// secret is a syntactically valid (base64) but wrong account key.
const secret = "c3VwM3Itc2VjcmV0LWszeS1mb3ItdGVzdHM="

func TestRegistryBadSettings(t *testing.T) {
	if !slices.Contains(fxelection.Backends(), "blob") {
		t.Fatal("blob not registered")
	}
	base := fxelection.Settings{"account_url": "http://127.0.0.1:1/devstoreaccount1", "account_name": "acct", "account_key": secret, "container": "c"}
	with := func(kv ...string) fxelection.Settings {
		s := fxelection.Settings{}
		for k, v := range base {
			s[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(s, kv[i])
			} else {
				s[kv[i]] = kv[i+1]
			}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    fxelection.Settings
		want string
	}{
		{"no container", with("container", ""), `"container"`},
		{"no account_url", with("account_url", ""), `"account_url"`},
		{"no account_name", with("account_name", ""), `"account_name"`},
		{"no account_key", with("account_key", ""), `"account_key"`},
		{"nothing", fxelection.Settings{"container": "c"}, `"connection_string"`},
		{"bad key", with("account_key", "!!"+secret+"!!"), `"account_key"`},
		{"bad url", with("account_url", "ftp://"+secret+"@host/"), `"account_url"`},
		{"both", with("connection_string", "AccountName=a;AccountKey="+secret), `"connection_string"`},
		{"bad connection string", fxelection.Settings{"container": "c", "connection_string": "AccountKey=" + secret + ";garbage"}, `"connection_string"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fxelection.NewBackend(context.Background(), "blob", tc.s)
			if err == nil {
				if c, ok := b.(io.Closer); ok {
					_ = c.Close()
				}
				t.Fatalf("accepted %v", tc.s)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %s", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error leaks the key: %q", err)
			}
		})
	}
}

func TestRegistryBackend(t *testing.T) {
	srv := server(t)
	for name, s := range map[string]fxelection.Settings{
		"account":           {"account_url": srv.ServiceURL(), "account_name": srv.AccountName(), "account_key": srv.AccountKey(), "container": container, "prefix": "reg/"},
		"connection_string": {"connection_string": srv.ConnectionString(), "container": container, "prefix": "reg/"},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := fxelection.NewBackend(ctxT(t), "blob", s)
			if err != nil {
				t.Fatal(err)
			}
			defer b.(io.Closer).Close()
			if fxelection.BackendName(b) != "blob" {
				t.Fatalf("name %q", fxelection.BackendName(b))
			}
			e := electiontest.Election(t)
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
	bad, err := fxelection.NewBackend(ctxT(t), "blob", fxelection.Settings{
		"account_url": srv.ServiceURL(), "account_name": srv.AccountName(), "account_key": secret, "container": container,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.(io.Closer).Close()
	_, err = bad.Get(ctxT(t), electiontest.Election(t))
	if err == nil || errors.Is(err, fxelection.ErrNoLease) || strings.Contains(err.Error(), secret) {
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
	err := fx.New(fx.NopLogger, fx.Supply(c), bloblease.Module, fx.Invoke(func(fxelection.Backend) {})).Err()
	if err == nil || !strings.Contains(err.Error(), "bloblease.Options") {
		t.Fatalf("module without Options: %v", err)
	}
	err = fx.New(fx.NopLogger, fx.Supply(c, bloblease.Options{}), bloblease.Module, fx.Invoke(func(fxelection.Backend) {})).Err()
	if !errors.Is(err, bloblease.ErrContainerRequired) {
		t.Fatalf("module with empty Options: %v", err)
	}
}
