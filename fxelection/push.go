package fxelection

import "github.com/fxelection/fxelection/fxelection/backendkit"

// subscribe makes the push wake-up subscription. It runs as a task of its
// own (see startCampaign), apart from the campaign's first step, so that a
// Subscribe or cancel that blocks (a hung store) can delay neither the
// campaign loop nor Stop. It leaves the cancel for Stop (which runs it on a
// goroutine of its own and closes listenDone after it returns): no
// goroutine waits for the subscription in between. If Subscribe returns
// after Stop began, the subscription is cancelled at once, here; if Stop
// began before, there is none.
func (e *Elector) subscribe(n backendkit.Notifier) {
	if e.halted.Load() {
		return
	}
	cancel := n.Subscribe(e.cfg.Name, e.poke)
	if cancel == nil {
		cancel = func() {}
	}
	e.mu.Lock()
	stopping := e.halted.Load() // Stop sets it before it looks for unsub
	if !stopping {
		e.unsub = cancel
	}
	done := e.listenDone
	e.mu.Unlock()
	e.subscribed.Store(true)
	if stopping {
		defer close(done)
		cancel()
	}
}

// takeUnsubscribe returns the push subscription's cancel for Stop, once.
func (e *Elector) takeUnsubscribe() func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.unsub
	e.unsub = nil
	return u
}
