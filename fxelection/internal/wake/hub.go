// Package wake is the bookkeeping behind push wake-up, shared by the
// in-memory backend and, through backendkit.Hub, every other backend.
package wake

import (
	"context"
	"slices"
	"sync"
)

// Hub is the bookkeeping behind a backend's push wake-up (Notifier),
// written once for all backends: subscriptions per election, one listener
// goroutine that runs only while any subscription exists, and dispatch that
// never calls a wake function after its cancel returned.
//
// The backend supplies only the listener: a function that receives the
// store's notifications (Redis pub/sub, Postgres LISTEN, …) until its
// context is done, calling Wake(election) per release and WakeAll after it
// (re)connects, since releases may have been missed while it was down. It
// should reconnect with Backoff on its own errors. Create one with
// New; its methods are safe for concurrent use.
type Hub struct {
	listen func(ctx context.Context, h *Hub)

	mu     sync.Mutex        // guards the fields below; wake calls run under it
	subs   map[string][]*sub // a slice, not a map: most elections have one subscriber
	count  int
	run    *hubRun
	closed bool
}

type sub struct{ wake func() }

// hubRun is one listener goroutine.
type hubRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a hub whose listener is listen. With a nil listen no
// goroutine runs: the backend calls Wake itself (as the in-memory one does).
func New(listen func(ctx context.Context, h *Hub)) *Hub {
	return &Hub{listen: listen, subs: map[string][]*sub{}}
}

// Subscribe implements Notifier's Subscribe for the backend. The first
// subscription starts the listener; cancelling the last one stops it and
// waits for it to end. wake is called with the hub's lock held, so it must
// not block or call back into the hub.
func (h *Hub) Subscribe(election string, wake func()) (cancel func()) {
	if wake == nil {
		return func() {}
	}
	s := &sub{wake: wake}
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

func (h *Hub) unsubscribe(election string, s *sub) {
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
func (h *Hub) Wake(election string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs[election] {
		s.wake()
	}
}

// WakeAll calls every subscriber.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, list := range h.subs {
		for _, s := range list {
			s.wake()
		}
	}
}

// Listening reports whether the listener goroutine runs.
func (h *Hub) Listening() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run != nil
}

// Close stops the listener for good and waits for it; later subscriptions
// do nothing. For a backend that owns its client and is closing it.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	stop := h.run
	h.run, h.subs, h.count = nil, map[string][]*sub{}, 0
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
