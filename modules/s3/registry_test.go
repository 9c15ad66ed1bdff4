package s3lease_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

const secret = "sup3r-s3cret-k3y"

func TestRegistryBadSettings(t *testing.T) {
	if !slices.Contains(fxelection.Backends(), "s3") {
		t.Fatal("s3 not registered")
	}
	base := fxelection.Settings{"endpoint": "127.0.0.1:9000", "bucket": "b", "access_key": "ak", "secret_key": secret}
	with := func(k, v string) fxelection.Settings {
		s := fxelection.Settings{}
		for kk, vv := range base {
			s[kk] = vv
		}
		if v == "" {
			delete(s, k)
		} else {
			s[k] = v
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    fxelection.Settings
		want string
	}{
		{"no endpoint", with("endpoint", ""), `"endpoint"`},
		{"no bucket", with("bucket", ""), `"bucket"`},
		{"bad secure", with("secure", "maybe"), `"secure"`},
		{"secret without key", with("access_key", ""), `"access_key"`},
		{"bad endpoint", with("endpoint", "http://"+secret+"@host:9000/path"), `"endpoint"`},
		{"endpoint with path", with("endpoint", "host:9000/"+secret), `"endpoint"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fxelection.NewBackend(context.Background(), "s3", tc.s)
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
				t.Fatalf("error leaks the secret: %q", err)
			}
		})
	}
}

func TestRegistryBackend(t *testing.T) {
	srv := server(t)
	s := fxelection.Settings{
		"endpoint": srv.Endpoint(), "bucket": bucket, "access_key": srv.AccessKey(),
		"secret_key": srv.SecretKey(), "secure": "false", "region": "us-east-1", "prefix": "reg/",
	}
	b, err := fxelection.NewBackend(ctxT(t), "s3", s)
	if err != nil {
		t.Fatal(err)
	}
	defer b.(io.Closer).Close()
	if fxelection.BackendName(b) != "s3" {
		t.Fatalf("name %q", fxelection.BackendName(b))
	}
	e := electiontest.Election(t)
	l, err := b.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Holder != "a" || got.Term != l.Term {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := newClient(t).StatObject(ctxT(t), bucket, "reg/"+e+".json", minio.StatObjectOptions{}); err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}
	// A wrong secret fails with a store error that does not contain it.
	s["secret_key"] = secret
	bad, err := fxelection.NewBackend(ctxT(t), "s3", s)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.(io.Closer).Close()
	_, err = bad.Get(ctxT(t), e)
	if err == nil || errors.Is(err, fxelection.ErrNoLease) || strings.Contains(err.Error(), secret) {
		t.Fatalf("Get with a wrong secret: %v", err)
	}
}

func TestModule(t *testing.T) {
	c := newClient(t)
	var got fxelection.Backend
	var s3b *s3lease.Backend
	app := fxtest.New(t,
		fx.Supply(c, s3lease.Options{Bucket: bucket}),
		s3lease.Module,
		fx.Populate(&got, &s3b),
	)
	app.RequireStart().RequireStop()
	if got == nil || got != fxelection.Backend(s3b) || s3b.Bucket() != bucket {
		t.Fatalf("backend %v / %v", got, s3b)
	}
	// Options are required: Bucket is.
	err := fx.New(fx.NopLogger, fx.Supply(c), s3lease.Module, fx.Invoke(func(fxelection.Backend) {})).Err()
	if err == nil || !strings.Contains(err.Error(), "s3lease.Options") {
		t.Fatalf("module without Options: %v", err)
	}
	err = fx.New(fx.NopLogger, fx.Supply(c, s3lease.Options{}), s3lease.Module, fx.Invoke(func(fxelection.Backend) {})).Err()
	if !errors.Is(err, s3lease.ErrBucketRequired) {
		t.Fatalf("module with empty Options: %v", err)
	}
}
