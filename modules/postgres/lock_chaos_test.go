package pglease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestSoakLockChaos runs the chaos kit's lock schedule
// (electiontest.RunChaos with Locks) on the package's private PostgreSQL: five
// clients, each with its own pool and lock.Locker behind its own
// fault-injecting proxy, locking two keys through partitions, latency,
// resets, crashes, restarts, whole-cluster outages and kill -9 of the
// postmaster (committed rows survive, so no overlap is documented); no two
// holds of a key may overlap, terms strictly increase per key, the fenced
// log refuses no live write. FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it a long run.
func TestSoakLockChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := server(t)
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Locks:     &electiontest.LockWorkload{},
		Target:    srv.Addr(),
		Server:    srv,
		NewClient: chaosClient,
		Duration:  40 * time.Second,
		Seed:      4,
	})
}
