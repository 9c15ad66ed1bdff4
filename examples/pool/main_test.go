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

// TestPoolRuns: one worker takes every shard, then three share them.
func TestPoolRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	var out electiontesting.LogBuffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	if !strings.Contains(s, "w1 alone owns 12 shards") || strings.Count(s, "owns 4 (target 4, 3 workers)") != 3 {
		t.Fatalf("unexpected output")
	}
}
