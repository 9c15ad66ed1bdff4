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

// TestHandOverRuns: a hands over to b, then c preempts b.
func TestHandOverRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	var out electiontesting.LogBuffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	if !strings.Contains(s, "a handed over to b (term ") || !strings.Contains(s, "c (priority 1) took over from b (term ") {
		t.Fatalf("unexpected output")
	}
}
