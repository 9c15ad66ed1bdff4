package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPgfencingRuns runs the program against a private PostgreSQL: the
// leader's write passes, the late one is refused and changes nothing.
func TestPgfencingRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewPostgres(t, testserver.PostgresOptions{})
	var out electiontesting.LogBuffer
	if err := run(context.Background(), srv.DSN(), &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{"debited 25 from alice under term ", "late write refused: true\n", "alice's balance: 75\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
