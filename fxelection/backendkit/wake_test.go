package backendkit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

func TestWakeHub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var running atomic.Int32
		// The listener starts with the first subscription; it waits for
		// all three, so that its first WakeAll reaches each of them.
		subscribed := make(chan struct{})
		hub := backendkit.NewWakeHub(func(ctx context.Context, h *backendkit.WakeHub) {
			running.Add(1)
			defer running.Add(-1)
			select {
			case <-subscribed:
			case <-ctx.Done():
				return
			}
			h.WakeAll() // as after a (re)connect
			for {
				if !backendkit.SleepContext(ctx, time.Second) {
					return
				}
				h.Wake("a")
			}
		})
		var a1, a2, b atomic.Int32
		c1 := hub.Subscribe("a", func() { a1.Add(1) })
		c2 := hub.Subscribe("a", func() { a2.Add(1) })
		cb := hub.Subscribe("b", func() { b.Add(1) })
		close(subscribed)
		synctest.Wait()
		if running.Load() != 1 {
			t.Fatalf("%d listeners, want one shared", running.Load())
		}
		time.Sleep(2*time.Second + time.Millisecond)
		if a1.Load() != 3 || a2.Load() != 3 || b.Load() != 1 {
			t.Fatalf("wakes a1=%d a2=%d b=%d, want 3 3 1", a1.Load(), a2.Load(), b.Load())
		}
		c1()
		c1() // idempotent
		time.Sleep(time.Second)
		if a1.Load() != 3 || a2.Load() != 4 {
			t.Fatal("a cancelled subscription was woken")
		}
		c2()
		cb()
		synctest.Wait()
		if running.Load() != 0 {
			t.Fatal("listener still runs without subscriptions")
		}
		c3 := hub.Subscribe("a", func() {})
		synctest.Wait()
		if running.Load() != 1 {
			t.Fatal("listener not restarted by a new subscription")
		}
		hub.Close()
		c3()
		if running.Load() != 0 {
			t.Fatal("Close did not stop the listener")
		}
		hub.Subscribe("a", func() {})()
		if running.Load() != 0 {
			t.Fatal("subscription after Close started a listener")
		}
	})
}

func TestBackoff(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	for n, want := range map[int]time.Duration{1: base, 2: 2 * base, 3: 4 * base, 4: 8 * base, 5: max, 50: max} {
		got := backendkit.Backoff(n, base, max)
		if got < want || got >= want*6/5+1 {
			t.Errorf("Backoff(%d) = %v, want [%v, %v)", n, got, want, want*6/5)
		}
	}
}
