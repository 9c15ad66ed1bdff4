package ddblease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// BenchmarkBackend: a follower's poll is one GetItem; a renewal one
// GetItem and one conditional PutItem.
func BenchmarkBackend(b *testing.B) {
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, ddblease.Options{})
	}, time.Hour)
}

// BenchmarkHandover measures graceful hand-over (storetest.RunHandoverBenchmark:
// the leader's Stop until the elector on another client leads) with
// LeaseDuration 2s, RenewDeadline 1s, RetryPeriod 100ms, each leader
// stopped at a random point of the follower's retry cycle: with no push
// wake-up, the follower's next poll after the release, then its
// conditional PutItem.
func BenchmarkHandover(b *testing.B) {
	storetest.RunHandoverBenchmark(b, [2]fxelection.Backend{
		newBackend(b, ddblease.Options{}), newBackend(b, ddblease.Options{}),
	}, storetest.HandoverOptions{
		Timing:      electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
		RandomPhase: true,
	})
}
