package redislease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestPool runs electiontest.CheckPool (256 shards over 4 workers, a
// fifth joining, one cut off) against a real redis-server, each worker
// with a client of its own, with slack on every bound for a loaded
// machine.
func TestPool(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	electiontest.CheckPool(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, srv.Addr(), Options{})
	}, electiontest.PoolOptions{Slack: 5 * time.Second})
}
