// Package backoff holds the waits shared by the elector, the watcher and the
// backends' reconnect loops: exponential backoff with jitter, and a sleep
// that ends with its context. The public API is backendkit.Backoff and
// backendkit.SleepContext.
package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Delay returns the wait after n consecutive failures: base doubling per
// failure, capped at max, plus up to 20% jitter (so at most 1.2×max). The
// elector and backends' reconnect loops share it. It never overflows: the
// doubling stops at max, and the jitter saturates at the largest Duration.
func Delay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		if d > max/2 {
			d = max
			break
		}
		d *= 2
	}
	return Jitter(min(d, max))
}

// Sleep waits for d or until ctx is done, and reports whether the
// full d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// JitterFactor is how much longer than d a jittered wait may be: Jitter(d)
// is in [d, JitterFactor·d]. Docs that state it are checked against it.
const JitterFactor = 1.2

// Jitter returns a duration in [d, 1.2·d], saturating at the largest
// Duration instead of overflowing.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	extra := time.Duration(rand.Int64N(int64(d/5) + 1))
	if d > math.MaxInt64-extra {
		return math.MaxInt64
	}
	return d + extra
}

// JitterMax is 1.2·d (the longest Jitter(d)), computed in integers so that
// it cannot overflow for any d a Config allows, and saturating
// beyond.
func JitterMax(d time.Duration) time.Duration {
	if d > math.MaxInt64-d/5 {
		return math.MaxInt64
	}
	return d + d/5
}
