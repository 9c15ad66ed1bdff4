package fxgocron_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
)

// TestClockAhead: what the package doc says of an instance whose clock
// is ahead. Two instances fire the same ticks (every two seconds), one
// skew later than the other: ahead by less than MinHold, the first runs
// every tick and the other none; by more than MinHold, every tick runs on
// both. On fake time, where a lock round trip takes no time.
func TestClockAhead(t *testing.T) {
	const ticks, interval = 5, 2 * time.Second
	for _, tc := range []struct {
		name                 string
		skew                 time.Duration
		aheadRuns, laterRuns int
	}{
		{"below MinHold", fxgocron.DefaultMinHold - 10*time.Millisecond, ticks, 0},
		{"above MinHold", fxgocron.DefaultMinHold + 10*time.Millisecond, ticks, ticks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				ahead := newLocker(t, store, "ahead", fxgocron.LockerOptions{})
				later := newLocker(t, store, "later", fxgocron.LockerOptions{})
				run := func(l *fxgocron.Locker) int {
					lk, err := l.Lock(context.Background(), "tick")
					if err != nil {
						return 0
					}
					time.Sleep(time.Millisecond) // the job
					unlock(t, lk)
					return 1
				}
				var a, b int
				for range ticks {
					tick := time.Now()
					a += run(ahead)
					time.Sleep(time.Until(tick.Add(tc.skew)))
					b += run(later)
					time.Sleep(time.Until(tick.Add(interval)))
				}
				closeLocker(t, ahead)
				closeLocker(t, later)
				if a != tc.aheadRuns || b != tc.laterRuns {
					t.Fatalf("skew %v: the instance ahead ran %d of %d ticks, the other %d; want %d and %d",
						tc.skew, a, ticks, b, tc.aheadRuns, tc.laterRuns)
				}
			})
		})
	}
}
