package pglease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestPool runs electiontest.CheckPool (256 shards over 4 workers, a
// fifth joining, one cut off) against a real PostgreSQL server, each
// worker with a pool of its own, with slack on every bound for a loaded
// machine.
func TestPool(t *testing.T) {
	d := dsn(t)
	electiontest.CheckPool(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "pool", pglease.Options{})
		return b
	}, electiontest.PoolOptions{Slack: 5 * time.Second})
}
