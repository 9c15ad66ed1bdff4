package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPostgresRuns runs the program against a private PostgreSQL, with the
// lease table in the schema ops, until it leads; then stops it, which
// releases the lease.
func TestPostgresRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewPostgres(t, testserver.PostgresOptions{})
	ctx, cancelCtx := context.WithTimeout(context.Background(), time.Minute)
	defer cancelCtx()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE SCHEMA ops`); err != nil {
		t.Fatal(err)
	}

	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, srv.DSN(), "ops", out)
	})
	p.WaitFor(t, electiontesting.LeaderLimit, `msg="leadership acquired" election=billing`)
	var holder *string
	if err := conn.QueryRow(ctx, `SELECT holder FROM ops.fxelection_leases WHERE name = 'billing'`).Scan(&holder); err != nil || holder == nil {
		t.Fatalf("lease row in ops: %v, %v", holder, err)
	}
	p.Stop(t)
	if err := conn.QueryRow(ctx, `SELECT holder FROM ops.fxelection_leases WHERE name = 'billing'`).Scan(&holder); err != nil || holder != nil {
		t.Fatalf("after stop, holder %v (want released), %v", holder, err)
	}
}

// TestMissingSchemaFailsStart: a schema that does not exist stops the
// start with an error naming it, at once.
func TestMissingSchemaFailsStart(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewPostgres(t, testserver.PostgresOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out electiontesting.LogBuffer
	err := run(ctx, srv.DSN(), "nosuchschema", &out)
	if err == nil || !strings.Contains(err.Error(), `schema "nosuchschema" does not exist`) {
		t.Fatalf("run = %v, want the missing schema named", err)
	}
	if strings.Contains(out.String(), "leadership acquired") {
		t.Fatalf("led without a table:\n%s", out.String())
	}
	t.Log(err)
}
