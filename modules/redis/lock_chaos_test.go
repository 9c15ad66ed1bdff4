package redislease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestSoakLockChaos runs the chaos kit's lock schedule
// (electiontest.RunChaos with Locks) on a real redis-server: five clients, each
// with its own client and lock.Locker behind its own fault-injecting
// proxy, locking two keys through partitions, latency, resets, crashes,
// restarts, whole-cluster outages and kill -9 of the server; no two holds
// of a key may overlap, terms strictly increase per key, the fenced log
// refuses no live write. The server runs with appendonly yes, as in
// TestSoakChaos: a killed server comes back with its leases, so no overlap is
// documented. FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED make it
// a long run.
func TestSoakLockChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := newServer(t, testserver.RedisOptions{AppendOnly: true})
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Locks:     &electiontest.LockWorkload{},
		Target:    srv.Addr(),
		Server:    srv,
		NewClient: chaosClient,
		Duration:  40 * time.Second,
		Seed:      3,
	})
}
