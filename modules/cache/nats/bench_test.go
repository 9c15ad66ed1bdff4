package natslease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// Run: go test -run '^$' -bench . -benchtime 3s ./modules/cache/nats/
// (BenchmarkHandover makes at least 250 hand-overs per mode.)

// BenchmarkBackend measures the operations as an elector uses them.
func BenchmarkBackend(b *testing.B) {
	srv, _ := newServer(b)
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, srv.URL(), cachelease.Options{})
	}, 10*time.Second)
}

// BenchmarkHandover measures graceful hand-over latency (the leader's Stop
// until the elector on another connection leads), with push wake-up (KV
// watch) and with polling only.
func BenchmarkHandover(b *testing.B) {
	srv, _ := newServer(b)
	for _, mode := range []struct {
		name string
		push bool
	}{{"push", true}, {"poll-100ms", false}} {
		b.Run(mode.name, func(b *testing.B) {
			opts := cachelease.Options{DisablePush: !mode.push}
			backends := [2]*cachelease.Backend{newBackend(b, srv.URL(), opts), newBackend(b, srv.URL(), opts)}
			if mode.push {
				// Keep each backend's watch up between electors, as a
				// long-lived process would.
				for _, be := range backends {
					b.Cleanup(be.Subscribe("bench-keepalive", func() {}))
				}
				time.Sleep(500 * time.Millisecond)
			}
			storetest.RunHandoverBenchmark(b, [2]fxelection.Backend{backends[0], backends[1]}, storetest.HandoverOptions{
				Timing:      electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
				RandomPhase: !mode.push,
			})
		})
	}
}
