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

// TestMemcachedRuns runs the program against two private memcached
// servers until it leads, then stops it, which releases the lease.
func TestMemcachedRuns(t *testing.T) {
	a := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	b := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, []string{a.Addr(), b.Addr()}, out)
	})
	p.WaitFor(t, electiontest.LeaderLimit, `msg="leadership acquired" election=billing`)
	if out := p.Stop(t); !strings.Contains(out, `msg="leadership lost" election=billing`) {
		t.Errorf("no leadership lost on stop:\n%s", out)
	}
}
