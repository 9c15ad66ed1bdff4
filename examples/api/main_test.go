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

// TestAPIRuns runs the tour: a leads and works, b sees it, a resigns and b
// leads.
func TestAPIRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	var out electiontesting.LogBuffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{
		"a leads after TryAcquire: true\n",
		"a: IsLeader true, Lease a term ",
		"a works under term ",
		"work ran: true\n",
		"b sees leader a (term ",
		"b leads after a resigned: true\n",
		"a: running true, leading false\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
