package zklease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
)

// Run: go test -run '^$' -bench . -benchtime 2s -count 3 ./ (inside
// modules/zookeeper). BenchmarkHandover uses at least 250 hand-overs per
// mode. The test ZooKeeper runs with its defaults (forceSync on: every
// write is fsynced to the transaction log before it is acknowledged).

// BenchmarkBackend measures the four operations as an elector uses them
// (storetest.RunBackendBenchmarks) on the shared standalone ZooKeeper.
func BenchmarkBackend(b *testing.B) {
	addr := server(b)
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, Options{}, addr)
	}, 10*time.Second)
}

// BenchmarkHandover measures graceful hand-over latency (the leader's Stop
// until the elector on another connection leads), with the child-watch
// wake-up and with polling only, over at least 250 hand-overs.
func BenchmarkHandover(b *testing.B) {
	addr := server(b)
	for _, mode := range []struct {
		name string
		push bool
	}{{"watch", true}, {"poll-100ms", false}} {
		b.Run(mode.name, func(b *testing.B) {
			backends := [2]fxelection.Backend{newBackend(b, Options{DisablePush: !mode.push}, addr), newBackend(b, Options{DisablePush: !mode.push}, addr)}
			storetest.RunHandoverBenchmark(b, backends, storetest.HandoverOptions{
				Timing:      electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
				RandomPhase: !mode.push,
			})
		})
	}
}
