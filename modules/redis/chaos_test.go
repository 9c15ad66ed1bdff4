package redislease

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on a real redis-server: five candidates, each with its own client behind
// its own fault-injecting proxy, partitions, latency, crashes, restarts,
// resignations, whole-cluster outages and kill -9 of the server. The server
// runs with appendonly yes: an acknowledged write reaches the file before
// the reply, so a killed server comes back with its leases and no overlap is
// allowed. FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED make it a
// long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := newServer(t, testserver.RedisOptions{AppendOnly: true})
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target:    srv.Addr(),
		Server:    srv,
		NewClient: chaosClient,
		Duration:  40 * time.Second,
		Seed:      1,
	})
}

// chaosClient is a chaos member's backend: a client of its own on addr
// (the member's proxy), failing fast so that the faults show.
func chaosClient(addr string) (fxelection.Backend, func(), error) {
	c := redis.NewClient(&redis.Options{
		Addr: addr, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, MaxRetries: -1,
	})
	b, err := New(c, Options{})
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return b, func() { _ = c.Close() }, nil
}
