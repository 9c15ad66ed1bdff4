package backendkit

import (
	"context"

	"github.com/fxelection/fxelection/fxelection/internal/wake"
)

// WakeHub is the bookkeeping behind a backend's push wake-up
// (backendkit.Notifier), written once for all backends: subscriptions per
// election, one listener goroutine that runs only while any subscription
// exists, and dispatch that never calls a wake function after its cancel
// returned.
//
// The backend supplies only the listener: a function that receives the
// store's notifications (Redis pub/sub, Postgres LISTEN, …) until its
// context is done, calling Wake(election) per release and WakeAll after it
// (re)connects, since releases may have been missed while it was down. It
// should reconnect with Backoff on its own errors. Create one with
// NewWakeHub; its methods are safe for concurrent use.
type WakeHub struct{ h *wake.Hub }

// NewWakeHub returns a hub whose listener is listen. With a nil listen no
// goroutine runs: the backend calls Wake itself.
func NewWakeHub(listen func(ctx context.Context, h *WakeHub)) *WakeHub {
	w := &WakeHub{}
	var fn func(context.Context, *wake.Hub)
	if listen != nil {
		fn = func(ctx context.Context, _ *wake.Hub) { listen(ctx, w) }
	}
	w.h = wake.New(fn)
	return w
}

// Subscribe implements backendkit.Notifier's Subscribe for the backend. The
// first subscription starts the listener; cancelling the last one stops it
// and waits for it to end. wake is called with the hub's lock held, so it
// must not block or call back into the hub.
func (w *WakeHub) Subscribe(election string, wake func()) (cancel func()) {
	return w.h.Subscribe(election, wake)
}

// Wake calls the subscribers of election.
func (w *WakeHub) Wake(election string) { w.h.Wake(election) }

// WakeAll calls every subscriber.
func (w *WakeHub) WakeAll() { w.h.WakeAll() }

// Listening reports whether the listener goroutine runs (for a backend's
// tests that check the listener stops with its last subscription).
func (w *WakeHub) Listening() bool { return w.h.Listening() }

// Close stops the listener for good and waits for it; later subscriptions
// do nothing. For a backend that owns its client and is closing it.
func (w *WakeHub) Close() { w.h.Close() }
