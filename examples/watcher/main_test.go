package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWatcherRuns: the watcher routes to a, then to b after a stopped.
func TestWatcherRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	var out electiontesting.LogBuffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	ra, rb := strings.Index(s, `routing requests to "10.0.0.1:8080"`), strings.LastIndex(s, `routing requests to "10.0.0.2:8080"`)
	if ra < 0 || rb < ra || !strings.Contains(s, "leader a at 10.0.0.1:8080, term ") ||
		!strings.Contains(s, "leader b at 10.0.0.2:8080, term ") || !strings.Contains(s, "(known true, store error <nil>)") {
		t.Fatalf("the watcher did not follow a, then b")
	}
}
