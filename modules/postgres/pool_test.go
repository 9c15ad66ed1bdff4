package pglease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testtier"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestPoolSmoke runs storetest.CheckPool small against
// a real PostgreSQL server: 8 shards over 2 workers, a third joining, one cut off,
// one round of chaos, on a short timing (lease 3s, retry 500ms) with slack
// on every bound for a loaded machine. The pool's shares and moves are
// decided by package pool and tested there on fake time; this is the pool
// end to end on the store. TestSoakPool and TestSoakPoolKill are the heavy
// runs.
func TestPoolSmoke(t *testing.T) {
	d := dsn(t)
	storetest.CheckPool(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "pool", pglease.Options{})
		return b
	}, storetest.PoolOptions{
		Shards: 8, Workers: 2, ChaosRounds: 1,
		Slack: 30 * time.Second, // generous: the default tier runs this beside other packages under -race
	})
}

// TestSoakPool runs storetest.CheckPool (256 shards over 4 workers, a
// fifth joining, one cut off) against a real PostgreSQL server, each
// worker with a pool of its own, with slack on every bound for a loaded
// machine. Soak tier: 1,280 electors need the machine to themselves.
func TestSoakPool(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	d := dsn(t)
	storetest.CheckPool(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "pool", pglease.Options{})
		return b
	}, storetest.PoolOptions{
		// fxelection's default timing (lease 15s, renew deadline 10s, retry
		// 2s): 1,280 electors under the race detector on a machine whose two
		// cores are oversubscribed four times over must keep their leases.
		// With a retry of 1s and a renew deadline of 4s they lost hundreds
		// of renewals there (stress-ng --cpu 4 beside the whole suite).
		Timing:      electiontest.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Slack:       60 * time.Second, // generous: the soak tier runs this beside other packages under -race, sometimes on oversubscribed cores
		ChaosRounds: 3,
	})
}

// TestSoakPoolKill runs storetest.CheckPoolKill against a real PostgreSQL
// server: 256 shards over 4 workers, three here and one in a child process
// (this test binary running TestPoolChild), which is killed with SIGKILL;
// its shards must be owned again within LeaseDuration plus two
// RetryPeriods, with slack for a loaded machine. Soak tier: a child
// process and 1,280 electors; on fake time, package pool tests a worker
// that dies without releasing (TestKilledWorkerSharesRespread).
func TestSoakPoolKill(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	d := dsn(t)
	storetest.CheckPoolKill(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "pool", pglease.Options{})
		return b
	}, storetest.PoolKillOptions{
		Timing: electiontest.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Slack:  20 * time.Second, // generous: the soak tier runs this beside other packages under -race
		Addr:   d,
	})
}

// TestPoolChild is TestSoakPoolKill's child worker (its TestMain starts no
// server then); in any other run it returns at once.
func TestPoolChild(t *testing.T) {
	storetest.RunPoolChild(t, func(t *testing.T, dsn string) fxelection.Backend {
		b, _ := newBackend(t, dsn, "pool-child", pglease.Options{})
		return b
	})
}
