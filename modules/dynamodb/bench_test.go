package ddblease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// BenchmarkBackend: a follower's poll is one GetItem; a renewal one
// GetItem and one conditional PutItem.
func BenchmarkBackend(b *testing.B) {
	electiontest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, ddblease.Options{})
	}, time.Hour)
}
