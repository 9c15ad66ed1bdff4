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

// TestMemcachedRuns runs the program against two private memcached
// servers until it leads, then stops it, which releases the lease.
func TestMemcachedRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	a := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	b := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, []string{a.Addr(), b.Addr()}, out)
	})
	p.LeadThenStop(t, "billing")
}
