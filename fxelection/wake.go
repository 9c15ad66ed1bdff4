package fxelection

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// WakeHub is the bookkeeping behind a backend's push wake-up (Notifier),
// written once for all backends: subscriptions per election, one listener
// goroutine that runs only while any subscription exists, and dispatch that
// never calls a wake function after its cancel returned.
//
// The backend supplies only the listener: a function that receives the
// store's notifications (Redis pub/sub, Postgres LISTEN, …) until its
// context is done, calling Wake(election) per release and WakeAll after it
// (re)connects, since releases may have been missed while it was down. It
// should reconnect with Backoff on its own errors. Create one with
// NewWakeHub; its methods are safe for concurrent use.
type WakeHub struct {
	listen func(ctx context.Context, h *WakeHub)

	mu     sync.Mutex            // guards the fields below; wake calls run under it
	subs   map[string][]*wakeSub // a slice, not a map: most elections have one subscriber
	count  int
	run    *hubRun
	closed bool
}

type wakeSub struct{ wake func() }

// hubRun is one listener goroutine.
type hubRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// NewWakeHub returns a hub whose listener is listen. With a nil listen no
// goroutine runs: the backend calls Wake itself (as the in-memory one does).
func NewWakeHub(listen func(ctx context.Context, h *WakeHub)) *WakeHub {
	return &WakeHub{listen: listen, subs: map[string][]*wakeSub{}}
}

// Subscribe implements Notifier's Subscribe for the backend. The first
// subscription starts the listener; cancelling the last one stops it and
// waits for it to end. wake is called with the hub's lock held, so it must
// not block or call back into the hub.
func (h *WakeHub) Subscribe(election string, wake func()) (cancel func()) {
	if wake == nil {
		return func() {}
	}
	s := &wakeSub{wake: wake}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return func() {}
	}
	h.subs[election] = append(h.subs[election], s)
	h.count++
	if h.run == nil && h.listen != nil {
		ctx, cancel := context.WithCancel(context.Background())
		r := &hubRun{cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			h.listen(ctx, h)
		}()
		h.run = r
	}
	h.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { h.unsubscribe(election, s) }) }
}

func (h *WakeHub) unsubscribe(election string, s *wakeSub) {
	h.mu.Lock()
	var stop *hubRun
	list := h.subs[election]
	if i := slices.Index(list, s); i >= 0 {
		if len(list) == 1 {
			delete(h.subs, election)
		} else {
			h.subs[election] = slices.Delete(slices.Clip(list), i, i+1)
		}
		h.count--
		if h.count == 0 {
			stop, h.run = h.run, nil
		}
	}
	h.mu.Unlock()
	stop.stop()
}

// Wake calls the subscribers of election.
func (h *WakeHub) Wake(election string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs[election] {
		s.wake()
	}
}

// WakeAll calls every subscriber.
func (h *WakeHub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, list := range h.subs {
		for _, s := range list {
			s.wake()
		}
	}
}

// Listening reports whether the listener goroutine runs.
func (h *WakeHub) Listening() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run != nil
}

// Close stops the listener for good and waits for it; later subscriptions
// do nothing. For a backend that owns its client and is closing it.
func (h *WakeHub) Close() {
	h.mu.Lock()
	h.closed = true
	stop := h.run
	h.run, h.subs, h.count = nil, map[string][]*wakeSub{}, 0
	h.mu.Unlock()
	stop.stop()
}

func (r *hubRun) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// Backoff returns the wait after n consecutive failures: base doubling per
// failure, capped at max, plus up to 20% jitter (so at most 1.2×max). The
// elector and backends' reconnect loops share it. It never overflows: the
// doubling stops at max, and the jitter saturates at the largest Duration.
func Backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		if d > max/2 {
			d = max
			break
		}
		d *= 2
	}
	return jitter(min(d, max))
}

// SleepContext waits for d or until ctx is done, and reports whether the
// full d passed.
func SleepContext(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// jitter returns a duration in [d, 1.2·d], saturating at the largest
// Duration instead of overflowing.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	extra := time.Duration(rand.Int64N(int64(d/5) + 1))
	if d > math.MaxInt64-extra {
		return math.MaxInt64
	}
	return d + extra
}

// jitterMax is 1.2·d (the longest jitter(d)), computed in integers so that
// it cannot overflow for any d up to MaxRecordDuration, and saturating
// beyond.
func jitterMax(d time.Duration) time.Duration {
	if d > math.MaxInt64-d/5 {
		return math.MaxInt64
	}
	return d + d/5
}

// firstRenewal returns when, after an acquisition, the leader first renews:
// a uniformly random point in [p/2, p), so that elections acquired together
// spread their renewals over a retry period instead of hitting the store in
// lockstep forever.
func firstRenewal(p time.Duration) time.Duration {
	if p <= 1 {
		return p
	}
	half := p / 2
	return half + time.Duration(rand.Int64N(int64(p-half)))
}
