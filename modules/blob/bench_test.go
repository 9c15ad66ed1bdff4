package bloblease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/storetest"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// BenchmarkBackend: a follower's poll is two requests (properties, then the
// holder's check); a renewal is RenewLease plus a conditioned read.
func BenchmarkBackend(b *testing.B) {
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, bloblease.Options{})
	}, time.Minute)
}
