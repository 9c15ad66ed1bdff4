package backendkit

import (
	"context"
	"time"

	"github.com/fxelection/fxelection/internal/backoff"
)

// Backoff returns the wait after n consecutive failures: base doubling per
// failure, capped at max, plus up to 20% jitter (so at most 1.2×max). It is
// the elector's own backoff, for a backend's reconnect loop. It never
// overflows.
func Backoff(n int, base, max time.Duration) time.Duration { return backoff.Delay(n, base, max) }

// SleepContext waits for d or until ctx is done, and reports whether the
// full d passed.
func SleepContext(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) }
