package memcachedlease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// Run: go test -run '^$' -bench . -benchtime 3s ./modules/cache/memcached/
// (BenchmarkHandover makes at least 250 hand-overs.)

// BenchmarkBackend measures the operations as an elector uses them.
func BenchmarkBackend(b *testing.B) {
	srv := testserver.NewMemcached(b, testserver.MemcachedOptions{})
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, srv.Addr(), cachelease.Options{})
	}, 10*time.Second)
}

// BenchmarkHandover measures graceful hand-over latency (the leader's Stop
// until the elector on another client leads). memcached has no change
// notifications, so the follower learns of the release at its next poll:
// with RetryPeriod 100ms and a random phase, about half of it on average.
func BenchmarkHandover(b *testing.B) {
	srv := testserver.NewMemcached(b, testserver.MemcachedOptions{})
	backends := [2]fxelection.Backend{newBackend(b, srv.Addr(), cachelease.Options{}), newBackend(b, srv.Addr(), cachelease.Options{})}
	storetest.RunHandoverBenchmark(b, backends, storetest.HandoverOptions{
		Timing:      electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
		RandomPhase: true,
	})
}
