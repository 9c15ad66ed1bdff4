package main

import (
	"context"
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNatsRuns runs the program against a private nats-server -js until
// it leads, then stops it, which releases the lease.
func TestNatsRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, srv.URL(), out)
	})
	p.LeadThenStop(t, "billing")
}
