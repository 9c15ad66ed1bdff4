package fxelection

import (
	"context"
	"sync"
)

// The loop's mailbox: requests (TryAcquire, Resign) and events (timers,
// Stop) for the campaign loop, and whether the loop is parked. Who wakes a
// parked loop owns it: post and signal report it (resume), and the caller
// then runs the loop's next step (Elector.leadStep).

// mailbox is the campaign loop's mailbox, part of its Elector.
type mailbox struct {
	// mail carries a token when requests wait in reqs, events were
	// signalled while the loop runs (not parked), the backend pushed a
	// wake-up (woken) or Stop began (halted).
	mail chan struct{}

	evMu      sync.Mutex
	reqs      []request
	events    loopEvent
	parked    bool
	loopEnded bool
	woken     bool          // the backend pushed a wake-up (backendkit.Notifier)
	loopDone  chan struct{} // closed when the loop ends; made on demand (doneCh)
}

// post puts r in the loop's mailbox and wakes the loop; posted is false if
// the loop has ended, resume says the caller must resume it.
func (e *mailbox) post(r request) (posted, resume bool) {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if e.loopEnded {
		return false, false
	}
	e.reqs = append(e.reqs, r)
	return true, e.wakeLoop()
}

// signal records ev for the loop and wakes it; resume says the caller must
// resume it.
func (e *mailbox) signal(ev loopEvent) (resume bool) {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if e.loopEnded {
		return false
	}
	e.events |= ev
	return e.wakeLoop()
}

// wakeLoop, with evMu held, reports whether the loop is parked (and so
// must be resumed by the caller, which it now owns); otherwise it leaves
// a token in mail for the running loop.
func (e *mailbox) wakeLoop() bool {
	if e.parked {
		e.parked = false
		return true
	}
	select {
	case e.mail <- struct{}{}:
	default:
	}
	return false
}

// nextRequest takes the oldest request from the mailbox.
func (e *mailbox) nextRequest() (request, bool) {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if len(e.reqs) == 0 {
		return request{}, false
	}
	r := e.reqs[0]
	e.reqs[0] = request{}
	e.reqs = e.reqs[1:]
	if len(e.reqs) == 0 {
		e.reqs = nil
	} else {
		select {
		case e.mail <- struct{}{}:
		default:
		}
	}
	return r, true
}

// requeue puts requests the leadership did not handle back at the front
// of the mailbox, for the campaign.
func (e *mailbox) requeue(rs []request) {
	e.evMu.Lock()
	e.reqs = append(rs, e.reqs...)
	select {
	case e.mail <- struct{}{}:
	default:
	}
	e.evMu.Unlock()
}

// endLoop marks the loop over (requests still in the mailbox get
// ErrNotRunning) and closes loopDone; it runs once.
func (e *mailbox) endLoop() {
	e.evMu.Lock()
	if e.loopEnded {
		e.evMu.Unlock()
		return
	}
	e.loopEnded = true
	e.reqs = nil
	done := e.loopDone
	e.evMu.Unlock()
	if done != nil {
		close(done)
	}
}

// doneCh returns a channel closed when the loop has ended. It is made on
// demand (by Stop and requests), so that a running elector does not keep
// one.
func (e *mailbox) doneCh() <-chan struct{} {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if e.loopDone == nil {
		e.loopDone = make(chan struct{})
		if e.loopEnded {
			close(e.loopDone)
		}
	}
	return e.loopDone
}

// poke is the backendkit.Notifier's wake-up; it never blocks. The wake-up is kept
// (woken) until the campaign's next pause takes it; a parked leadership
// is not resumed for it.
func (e *mailbox) poke() {
	e.evMu.Lock()
	if !e.loopEnded {
		e.woken = true
		if !e.parked {
			select {
			case e.mail <- struct{}{}:
			default:
			}
		}
	}
	e.evMu.Unlock()
}

// takeWoken reports whether a wake-up was pushed since the last call.
func (e *mailbox) takeWoken() bool {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	w := e.woken
	e.woken = false
	return w
}

// ask posts req (req.reply buffered) to the loop, resuming it if parked,
// and waits for the answer, for ctx, or for the loop to end
// (ErrNotRunning).
func (e *Elector) ask(ctx context.Context, req request) (result, error) {
	posted, resume := e.post(req)
	if !posted {
		return result{}, ErrNotRunning
	}
	if resume {
		go e.leadStep()
	}
	loopDone := e.doneCh()
	select {
	case r := <-req.reply:
		return r, nil
	case <-ctx.Done():
		return result{}, ctx.Err()
	case <-loopDone:
		// The loop answers every request it took before it ends.
		select {
		case r := <-req.reply:
			return r, nil
		default:
			return result{}, ErrNotRunning
		}
	}
}

// send asks the loop req (ask) when the elector is running.
func (e *Elector) send(ctx context.Context, req request) (result, error) {
	e.mu.Lock()
	running := e.started && !e.stopped
	e.mu.Unlock()
	if !running {
		return result{}, ErrNotRunning
	}
	return e.ask(ctx, req)
}
