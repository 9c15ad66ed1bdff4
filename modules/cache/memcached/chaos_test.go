package memcachedlease

import (
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on a real memcached: five candidates, each with its own client behind its
// own fault-injecting proxy, partitions, latency, crashes, restarts,
// resignations, whole-cluster outages and kill -9 of the server. memcached
// keeps nothing on disk: a restarted server frees the election at once while
// the old leader still believes until its next renewal (documented), so
// overlaps right after a restart count as documented. Its TTL is whole
// seconds (a lease is stored for ceil(LeaseDuration)+1 s), which lengthens
// failover by up to 2 s. FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED
// make it a long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	tm := electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target:             srv.Addr(),
		Server:             srv,
		RestartLosesLeases: true,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			c := memcache.New(addr)
			c.Timeout = time.Second
			b, err := New(c, cachelease.Options{})
			if err != nil {
				_ = c.Close()
				return nil, nil, err
			}
			return b, func() { _ = c.Close() }, nil
		},
		Timing:           tm,
		FailoverBound:    tm.LeaseDuration + 2*time.Second + 2*tm.RetryPeriod,
		ConvergenceBound: tm.LeaseDuration + 2*time.Second + 2*tm.RetryPeriod,
		Duration:         40 * time.Second,
		Seed:             5,
	})
}
