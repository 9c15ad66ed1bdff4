package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGocronRuns: the job runs on a until a stops, then only on b.
func TestGocronRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	out := doctest.Stdout(t, main)
	t.Log(out)
	before, after, ok := strings.Cut(out, "a stopped\n")
	if !ok || !strings.Contains(before, "a runs") || strings.Contains(after, "a runs") || !strings.Contains(after, "b runs") {
		t.Fatalf("job did not move from a to b:\n%s", out)
	}
	if strings.LastIndex(out, "a runs") > strings.Index(out, "b runs") {
		t.Fatalf("a and b took turns running the job:\n%s", out)
	}
}
