package main

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

func TestMain(m *testing.M) { os.Exit(testserver.RunMain(m, nil)) }

// TestFxExampleRuns runs the program against an embedded etcd until it
// leads, then stops it, which releases the lease.
func TestFxExampleRuns(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, c.Endpoints(), out)
	})
	p.LeadThenStop(t, "billing")
}
