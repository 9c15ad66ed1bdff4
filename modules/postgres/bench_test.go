package pglease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// BenchmarkBackend measures each statement: a follower's poll of a held
// lease (refused, the common case), the holder re-acquiring its own lease,
// the leader's renewal, Get, and taking a free lease and releasing it.
func BenchmarkBackend(b *testing.B) {
	d := dsn(b)
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		be, _ := newBackend(tb, d, "bench", pglease.Options{})
		if err := be.CreateTable(context.Background()); err != nil {
			tb.Fatal(err)
		}
		return be
	}, time.Minute)
}

// BenchmarkHandover measures graceful hand-over between two processes (two
// backends, each with its own pool), with the LISTEN/NOTIFY wake-up ("push")
// and without ("poll", RetryPeriod 250ms, jittered); each Stop comes at a
// random point of the follower's retry cycle.
func BenchmarkHandover(b *testing.B) {
	for _, mode := range []struct {
		name string
		push bool
	}{{"push", true}, {"poll", false}} {
		b.Run(mode.name, func(b *testing.B) {
			d := dsn(b)
			var backends [2]fxelection.Backend
			for i := range backends {
				be, _ := newBackend(b, d, fmt.Sprintf("handover-%d", i), pglease.Options{DisablePush: !mode.push})
				// Keep each backend's listener up for the whole run, as in a
				// process whose elections come and go.
				b.Cleanup(be.Subscribe("bench-keepalive", func() {}))
				backends[i] = be
			}
			storetest.RunHandoverBenchmark(b, backends, storetest.HandoverOptions{
				Timing:      electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
				RandomPhase: true,
			})
		})
	}
}
