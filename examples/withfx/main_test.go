package main

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWithFxRuns runs the app until it has written a report, then stops
// it: the reports stop and the app stops cleanly.
func TestWithFxRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	p := doctest.StartProgram(t, run)
	p.WaitFor(t, time.Minute, "report written with fencing term ")
	if out := p.Stop(t); strings.Contains(out, "failed") {
		t.Fatalf("output:\n%s", out)
	}
}
