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
	testserver.Exclusive(t, "pool") // one heavy pool test at a time on this machine
	srv := newServer(t, testserver.RedisOptions{})
	electiontest.CheckPool(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, srv.Addr(), Options{})
	}, electiontest.PoolOptions{
		// A retry period of 1s: 1,280 electors under the race detector on a
		// loaded machine must keep their leases without the store's and
		// the process's scheduling eating the renew deadline.
		Timing:      electiontest.Timing{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second},
		Slack:       20 * time.Second, // generous: CI runs this beside other packages under -race
		ChaosRounds: 3,
	})
}

// TestPoolKill runs electiontest.CheckPoolKill against a real
// redis-server: 256 shards over 4 workers, three here and one in a child
// process (this test binary running TestPoolChild), which is killed with
// SIGKILL; its shards must be owned again within LeaseDuration plus two
// RetryPeriods, with slack for a loaded machine.
func TestPoolKill(t *testing.T) {
	testserver.Exclusive(t, "pool") // one heavy pool test at a time on this machine
	srv := newServer(t, testserver.RedisOptions{})
	electiontest.CheckPoolKill(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, srv.Addr(), Options{})
	}, electiontest.PoolKillOptions{
		Timing: electiontest.Timing{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second},
		Slack:  20 * time.Second, // generous: CI runs this beside other packages under -race
		Addr:   srv.Addr(),
	})
}

// TestPoolChild is TestPoolKill's child worker; in any other run it
// returns at once.
func TestPoolChild(t *testing.T) {
	electiontest.RunPoolChild(t, func(t *testing.T, addr string) fxelection.Backend {
		return newBackend(t, addr, Options{})
	})
}
