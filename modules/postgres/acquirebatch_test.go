package pglease_test

import (
	"errors"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestAcquireBatchStatementsApart checks that AcquireBatch runs each
// request's statement in a transaction of its own: a trigger makes the
// statement for one election fail, and the requests before and after it
// in the same batch still win and stay won (in one transaction, the
// failure would have rolled them back), while the failing one gets a store
// error.
func TestAcquireBatchStatementsApart(t *testing.T) {
	d := dsn(t)
	opts := pglease.Options{Table: "pgl_batch_apart"}
	b, _ := newBackend(t, d, "batch-apart", opts)
	ctx := ctxT(t)
	if err := b.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	adm := admin(t, d)
	for _, stmt := range []string{
		`CREATE OR REPLACE FUNCTION pgl_batch_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.name LIKE '%-refused' THEN RAISE EXCEPTION 'refused by the test trigger'; END IF;
			RETURN NEW;
		END $$`,
		`DROP TRIGGER IF EXISTS pgl_batch_refuse ON ` + b.Table(),
		`CREATE TRIGGER pgl_batch_refuse BEFORE INSERT OR UPDATE ON ` + b.Table() + ` FOR EACH ROW EXECUTE FUNCTION pgl_batch_refuse()`,
	} {
		if _, err := adm.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	base := electiontesting.Election(t)
	req := func(name string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: base + name, Identity: "a", Duration: 60_000_000_000, Incarnation: backendkit.NewIncarnation()}
	}
	reqs := []backendkit.AcquireRequest{req("-first"), req("-refused"), req("-last")}
	res := b.AcquireBatch(ctx, reqs)
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(res), len(reqs))
	}
	if res[1].Err == nil || !backendkit.IsStoreFailure(res[1].Err) {
		t.Fatalf("the refused request: %v, want a store failure", res[1].Err)
	}
	for _, i := range []int{0, 2} {
		if res[i].Err != nil {
			t.Fatalf("request %d (%s): %v, want won", i, reqs[i].Election, res[i].Err)
		}
		got, err := b.Get(ctx, reqs[i].Election)
		if err != nil || got.Holder != "a" || got.Term != res[i].Lease.Term {
			t.Fatalf("after the batch, %s = %+v, %v; want a's lease", reqs[i].Election, got, err)
		}
	}
	if _, err := b.Get(ctx, reqs[1].Election); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("the refused election: %v, want no lease", err)
	}
}
