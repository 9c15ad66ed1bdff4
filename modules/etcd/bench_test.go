package etcdlease

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/storetest"
)

// Run: go test -run '^$' -bench . -benchtime 2s -count 3 ./ (inside
// modules/etcd). BenchmarkHandover uses at least 250 hand-overs per mode.
// The embedded etcd runs without fsync unless FXELECTION_ETCD_FSYNC=1.

// BenchmarkBackend measures the four operations as an elector uses them
// (storetest.RunBackendBenchmarks) on the embedded one-member etcd.
func BenchmarkBackend(b *testing.B) {
	eps := sharedCluster(b).Endpoints()
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, Options{}, eps...)
	}, 10*time.Second)
}

// BenchmarkAcquireRelease compares one Acquire+Release pair with etcd's
// own concurrency.Election Campaign+Resign on one long-lived session (whose
// lease is granted once, outside the loop; Acquire grants a fresh etcd
// lease each time and Release revokes it).
func BenchmarkAcquireRelease(b *testing.B) {
	c := sharedCluster(b)
	ctx := context.Background()
	b.Run("fxelection", func(b *testing.B) {
		be := newBackend(b, Options{}, c.Endpoints()...)
		req := backendkit.AcquireRequest{Election: electiontesting.Election(b), Identity: "a", Metadata: map[string]string{"addr": "10.0.0.1:8080"}, Duration: 10 * time.Second}
		for b.Loop() {
			l, err := be.Acquire(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if err := be.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("concurrency.Election", func(b *testing.B) {
		s, err := concurrency.NewSession(c.Client(b), concurrency.WithTTL(10))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		el := concurrency.NewElection(s, "bench-concurrency/"+electiontesting.Election(b))
		for b.Loop() {
			if err := el.Campaign(ctx, "10.0.0.1:8080"); err != nil {
				b.Fatal(err)
			}
			if err := el.Resign(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHandover measures graceful hand-over latency (the leader's Stop
// until the elector on another client leads), with the watch wake-up and
// with polling only, over at least 250 hand-overs.
func BenchmarkHandover(b *testing.B) {
	eps := sharedCluster(b).Endpoints()
	for _, mode := range []struct {
		name string
		push bool
	}{{"watch", true}, {"poll-100ms", false}} {
		b.Run(mode.name, func(b *testing.B) {
			backends := [2]*Backend{newBackend(b, Options{DisablePush: !mode.push}, eps...), newBackend(b, Options{DisablePush: !mode.push}, eps...)}
			if mode.push {
				// Keep each backend's watch up between electors, as a
				// long-lived process would.
				for _, be := range backends {
					b.Cleanup(be.Subscribe("bench-keepalive", func() {}))
				}
			}
			storetest.RunHandoverBenchmark(b, [2]fxelection.Backend{backends[0], backends[1]}, storetest.HandoverOptions{
				Timing:      electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
				RandomPhase: !mode.push,
			})
		})
	}
}
