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

// TestLocksRuns: 20 fenced increments, none refused, and never more than
// 3 jobs at once under the semaphore.
func TestLocksRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	var out electiontesting.LogBuffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	if !strings.Contains(s, "counter: 20 ") {
		t.Fatal("want 20 increments")
	}
	for _, n := range []string{"at most 1 ", "at most 2 ", "at most 3 "} {
		if strings.Contains(s, n) {
			return
		}
	}
	t.Fatal("more than 3 jobs at once")
}
