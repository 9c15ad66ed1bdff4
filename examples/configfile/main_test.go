package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const document = "../configs/elections.json"

// TestConfigFileRuns runs the README's document against a private Redis
// and PostgreSQL, with nothing in the environment but the two addresses:
// every election logs its start and leads, and the app stops cleanly.
func TestConfigFileRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	redis := testserver.NewRedis(t, testserver.RedisOptions{})
	pg := testserver.NewPostgres(t, testserver.PostgresOptions{})
	t.Setenv("REDIS_ADDR", redis.Addr())
	t.Setenv("DATABASE_URL", pg.DSN())
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, document, out)
	})
	var want []string
	for _, name := range []string{"billing", "reports", "ledger"} {
		want = append(want, `msg="election started" election=`+name, `msg="leadership acquired" election=`+name)
	}
	p.WaitFor(t, electiontesting.LeaderLimit, want...)
	out := p.Stop(t)
	if n := strings.Count(out, `msg="leadership lost"`); n != 3 {
		t.Errorf("%d leaderships lost on stop, want 3:\n%s", n, out)
	}
}

// TestConfigFileNamesMissingVariable: without REDIS_ADDR the program
// stops before dialling anything, naming the variable.
func TestConfigFileNamesMissingVariable(t *testing.T) {
	t.Setenv("REDIS_ADDR", "") // restored after the test
	if err := os.Unsetenv("REDIS_ADDR"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", "postgres://localhost/app")
	err := run(context.Background(), document, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "environment variable REDIS_ADDR is not set") {
		t.Fatalf("run = %v", err)
	}
}
