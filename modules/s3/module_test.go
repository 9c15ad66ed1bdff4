package s3lease_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

const secret = "sup3r-s3cret-k3y"

// provision decodes settings (JSON values; the "module" key is added) as
// an fxelection.backends.s3 module object, validates and provisions it.
// Its Cleanup runs when the test ends.
func provision(t testing.TB, settings map[string]any) (fxelection.Backend, error) {
	t.Helper()
	b, _, err := moduletest.ProvisionSettings(t, ctxT(t), "fxelection.backends.s3", settings)
	return b, err
}

// TestConfigModuleErrors: strict decoding and Validate name the JSON path
// or the setting, and never show the secret key.
func TestConfigModuleErrors(t *testing.T) {
	env := map[string]string{"S3_SECRET": secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.s3", "access_key": "ak", "secret_key": "{env.S3_SECRET}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(`, "bucket": "b"`), Want: moduletest.At("endpoint"), Is: config.ErrRequired},
		{Settings: obj(`, "endpoint": "h:9000"`), Want: moduletest.At("bucket"), Is: config.ErrRequired},
		{Settings: obj(`, "endpoint": "h:9000", "bucket": ""`), Want: moduletest.At("bucket"), Is: config.ErrRequired},
		{Settings: obj(`, "endpoint": "h:9000", "bucket": "b", "secure": "maybe"`), Want: moduletest.At("secure"), Is: config.ErrWrongType},
		{Settings: obj(`, "endpoint": "h:9000", "bucket": "b", "regoin": "x"`), Want: moduletest.At("regoin"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "endpoint": 9000, "bucket": "b"`), Want: moduletest.At("endpoint"), Is: config.ErrWrongType},
		{Settings: `{"module": "fxelection.backends.s3", "endpoint": "h:9000", "bucket": "b", "secret_key": "{env.S3_SECRET}"}`, Want: moduletest.Validated("access_key, secret_key:")},
		{Settings: `{"module": "fxelection.backends.s3", "endpoint": "h:9000", "bucket": "b", "access_key": "ak"}`, Want: moduletest.Validated("access_key, secret_key:")},
		{Settings: obj(`, "endpoint": "http://` + secret + `@host:9000/path", "bucket": "b"`), Want: moduletest.Validated("endpoint:")},
		{Settings: obj(`, "endpoint": "host:9000/` + secret + `", "bucket": "b"`), Want: moduletest.Validated("endpoint:")},
	}, secret)
}

// TestOptionsValidateBothPaths: New and the module share Options.Validate.
func TestOptionsValidateBothPaths(t *testing.T) {
	if err := (s3lease.Options{}).Validate(); !errors.Is(err, s3lease.ErrBucketRequired) {
		t.Fatalf("Options{}.Validate() = %v", err)
	}
	if _, err := s3lease.New(newClient(t), s3lease.Options{}); !errors.Is(err, s3lease.ErrBucketRequired) {
		t.Fatalf("New without a bucket: %v", err)
	}
	if err := (&s3lease.ConfigModule{Endpoint: "h:1"}).Validate(); !errors.Is(err, s3lease.ErrBucketRequired) {
		t.Fatalf("module without a bucket: %v", err)
	}
}

// TestConfigModule: the module provisions a client of its own that stores
// leases under the prefix; a wrong secret gives store errors without it.
func TestConfigModule(t *testing.T) {
	srv := server(t)
	s := map[string]any{
		"endpoint": srv.Endpoint(), "bucket": bucket, "access_key": srv.AccessKey(),
		"secret_key": srv.SecretKey(), "secure": false, "region": "us-east-1", "prefix": "reg/",
	}
	b, err := provision(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if b.(backendkit.NamedBackend).BackendName() != "s3" {
		t.Fatalf("name %q", b.(backendkit.NamedBackend).BackendName())
	}
	e := electiontesting.Election(t)
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
	s = map[string]any{
		"endpoint": srv.Endpoint(), "bucket": bucket, "access_key": srv.AccessKey(),
		"secret_key": secret, "secure": false, "region": "us-east-1", "prefix": "reg/",
	}
	bad, err := provision(t, s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Get(ctxT(t), e)
	if err == nil || errors.Is(err, backendkit.ErrNoLease) || strings.Contains(err.Error(), secret) {
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
	moduletest.CheckFxModuleNeedsOptions(t, s3lease.Module, fx.Supply(c), s3lease.Options{}, s3lease.ErrBucketRequired)
}
