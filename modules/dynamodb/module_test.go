package ddblease_test

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/moduletest"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

const secret = "sup3r-s3cret-k3y"

// provision decodes settings (JSON values; the "module" key is added) as
// an fxelection.backends.dynamodb module object, validates and provisions
// it. Its Cleanup runs when the test ends.
func provision(t testing.TB, settings map[string]any) (fxelection.Backend, error) {
	t.Helper()
	b, _, err := moduletest.ProvisionSettings(t, ctxT(t), "fxelection.backends.dynamodb", settings)
	return b, err
}

// TestConfigModuleErrors: strict decoding and Validate name the JSON path
// or the setting, and never show a secret or a value.
func TestConfigModuleErrors(t *testing.T) {
	moduletest.CheckRegistered(t, "fxelection.backends.dynamodb")
	env := map[string]string{"AWS_SECRET": secret}
	obj := func(rest string) string {
		return `{"module": "fxelection.backends.dynamodb", "access_key_id": "AKID", "secret_access_key": "{env.AWS_SECRET}"` + rest + `}`
	}
	moduletest.CheckErrors(t, env, []moduletest.Case{
		{Settings: obj(`, "table": "leases"`), Want: moduletest.At("region"), Is: config.ErrRequired},
		{Settings: obj(`, "region": "eu-west-1"`), Want: moduletest.At("table"), Is: config.ErrRequired},
		{Settings: obj(`, "region": "eu-west-1", "table": ""`), Want: moduletest.At("table"), Is: config.ErrRequired},
		{Settings: obj(`, "region": "eu-west-1", "table": "leases", "skip_create_table": "yes"`), Want: moduletest.At("skip_create_table"), Is: config.ErrWrongType},
		{Settings: obj(`, "region": "eu-west-1", "table": "leases", "regoin": "x"`), Want: moduletest.At("regoin"), Is: config.ErrUnknownKey},
		{Settings: obj(`, "region": 1, "table": "leases"`), Want: moduletest.At("region"), Is: config.ErrWrongType},
		{Settings: obj(`, "region": "eu west", "table": "leases"`), Want: moduletest.Validated("region:")},
		{Settings: obj(`, "region": "eu-west-1", "table": "le"`), Want: moduletest.Validated("Table:")},
		{Settings: obj(`, "region": "eu-west-1", "table": "` + secret + `/x"`), Want: moduletest.Validated("Table:")},
		{Settings: `{"module": "fxelection.backends.dynamodb", "region": "r", "table": "leases", "secret_access_key": "{env.AWS_SECRET}"}`, Want: moduletest.Validated("access_key_id, secret_access_key:")},
		{Settings: `{"module": "fxelection.backends.dynamodb", "region": "r", "table": "leases", "access_key_id": "AKID"}`, Want: moduletest.Validated("access_key_id, secret_access_key:")},
		{Settings: `{"module": "fxelection.backends.dynamodb", "region": "r", "table": "leases", "session_token": "{env.AWS_SECRET}"}`, Want: moduletest.Validated("session_token:")},
		{Settings: obj(`, "region": "r", "table": "leases", "endpoint": "http://` + secret + `@host:8000"`), Want: moduletest.Validated("endpoint:")},
		{Settings: obj(`, "region": "r", "table": "leases", "endpoint": "host:8000"`), Want: moduletest.Validated("endpoint:")},
		{Settings: obj(`, "region": "r", "table": "leases", "endpoint": "http://host:8000/?k=` + secret + `"`), Want: moduletest.Validated("endpoint:")},
	}, secret)
}

// TestOptionsValidateBothPaths: New, CreateTable and the module share
// Options.Validate.
func TestOptionsValidateBothPaths(t *testing.T) {
	if err := (ddblease.Options{}).Validate(); !errors.Is(err, ddblease.ErrTableRequired) {
		t.Fatalf("Options{}.Validate() = %v", err)
	}
	c := newClient(t)
	if _, err := ddblease.New(c, ddblease.Options{}); !errors.Is(err, ddblease.ErrTableRequired) {
		t.Fatalf("New without a table: %v", err)
	}
	if _, err := ddblease.New(c, ddblease.Options{Table: "a b"}); !errors.Is(err, ddblease.ErrInvalidTable) {
		t.Fatalf("New with a bad table: %v", err)
	}
	if _, err := ddblease.New(nil, ddblease.Options{Table: "abc"}); err == nil {
		t.Fatal("nil client accepted")
	}
	if err := ddblease.CreateTable(ctxT(t), c, "x"); !errors.Is(err, ddblease.ErrInvalidTable) {
		t.Fatalf("CreateTable with a bad table: %v", err)
	}
	if err := (&ddblease.ConfigModule{Region: "r"}).Validate(); !errors.Is(err, ddblease.ErrTableRequired) {
		t.Fatalf("module without a table: %v", err)
	}
}

// TestConfigModule: the module provisions a client of its own that stores
// leases in the table (created on first use).
func TestConfigModule(t *testing.T) {
	tbl := newTable()
	b, err := provision(t, map[string]any{
		"region": "us-east-1", "endpoint": server(t).Endpoint(), "table": tbl,
		"access_key_id": "AKIDTEST", "secret_access_key": secret, "session_token": "t0ken-" + secret,
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.(backendkit.NamedBackend).BackendName() != "dynamodb" {
		t.Fatalf("name %q", b.(backendkit.NamedBackend).BackendName())
	}
	e := electiontesting.Election(t)
	l, err := b.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := newBackend(t, ddblease.Options{Table: tbl, SkipCreateTable: true}).Get(ctxT(t), e); err != nil || got.Holder != "a" || got.Term != l.Term {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

// TestCreateTable: CreateTable is idempotent, and refuses a table whose key
// is not KeyAttribute; SkipCreateTable never creates one.
func TestCreateTable(t *testing.T) {
	c := newClient(t)
	tbl := newTable()
	skip := newBackend(t, ddblease.Options{Table: tbl, SkipCreateTable: true})
	if _, err := skip.Get(ctxT(t), "e"); err == nil || !backendkit.IsStoreFailure(err) {
		t.Fatalf("Get on a missing table with SkipCreateTable: %v, want a store failure", err)
	}
	for range 2 {
		if err := ddblease.CreateTable(ctxT(t), c, tbl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := skip.Get(ctxT(t), "e"); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get on the created table: %v, want ErrNoLease", err)
	}
	other := createOtherKeyTable(t, c)
	if err := ddblease.CreateTable(ctxT(t), c, other); !errors.Is(err, ddblease.ErrTableSchema) {
		t.Fatalf("CreateTable on a table with another key: %v, want ErrTableSchema", err)
	}
	if _, err := newBackend(t, ddblease.Options{Table: other}).Get(ctxT(t), "e"); !errors.Is(err, ddblease.ErrTableSchema) {
		t.Fatalf("Get on a table with another key: %v, want ErrTableSchema", err)
	}
}

func TestModule(t *testing.T) {
	c := newClient(t)
	var got fxelection.Backend
	var db *ddblease.Backend
	app := fxtest.New(t,
		fx.Supply(c, ddblease.Options{Table: table}),
		ddblease.Module,
		fx.Populate(&got, &db),
	)
	app.RequireStart().RequireStop()
	if got == nil || got != fxelection.Backend(db) || db.Table() != table {
		t.Fatalf("backend %v / %v", got, db)
	}
	moduletest.CheckFxModuleNeedsOptions(t, ddblease.Module, fx.Supply(c), ddblease.Options{}, ddblease.ErrTableRequired)
	moduletest.CheckFxModule(t, electiontesting.Election(t), "dynamodb", func() fxelection.Backend {
		return newBackend(t, ddblease.Options{})
	}, fx.Supply(c, ddblease.Options{Table: table}), ddblease.Module)
}
