package s3lease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/storetest"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// BenchmarkBackend: a follower's poll is one GET; a renewal one GET and one
// conditional PUT.
func BenchmarkBackend(b *testing.B) {
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, s3lease.Options{})
	}, time.Hour)
}
