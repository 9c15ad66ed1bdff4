package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNatsRuns runs the program against a private nats-server -js until
// it leads, then stops it, which releases the lease.
func TestNatsRuns(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, srv.URL(), out)
	})
	p.WaitFor(t, electiontest.LeaderLimit, `msg="leadership acquired" election=billing`)
	if out := p.Stop(t); !strings.Contains(out, `msg="leadership lost" election=billing`) {
		t.Errorf("no leadership lost on stop:\n%s", out)
	}
}
