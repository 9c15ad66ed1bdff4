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
func (m *mailbox) post(r request) (posted, resume bool) {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	if m.loopEnded {
		return false, false
	}
	m.reqs = append(m.reqs, r)
	return true, m.wakeLoop()
}

// signal records ev for the loop and wakes it; resume says the caller must
// resume it.
func (m *mailbox) signal(ev loopEvent) (resume bool) {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	if m.loopEnded {
		return false
	}
	m.events |= ev
	return m.wakeLoop()
}

// wakeLoop, with evMu held, reports whether the loop is parked (and so
// must be resumed by the caller, which it now owns); otherwise it leaves
// a token in mail for the running loop.
func (m *mailbox) wakeLoop() bool {
	if m.parked {
		m.parked = false
		return true
	}
	select {
	case m.mail <- struct{}{}:
	default:
	}
	return false
}

// nextRequest takes the oldest request from the mailbox.
func (m *mailbox) nextRequest() (request, bool) {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	if len(m.reqs) == 0 {
		return request{}, false
	}
	r := m.reqs[0]
	m.reqs[0] = request{}
	m.reqs = m.reqs[1:]
	if len(m.reqs) == 0 {
		m.reqs = nil
	} else {
		select {
		case m.mail <- struct{}{}:
		default:
		}
	}
	return r, true
}

// requeue puts requests the leadership did not handle back at the front
// of the mailbox, for the campaign.
func (m *mailbox) requeue(rs []request) {
	m.evMu.Lock()
	m.reqs = append(rs, m.reqs...)
	select {
	case m.mail <- struct{}{}:
	default:
	}
	m.evMu.Unlock()
}

// endLoop marks the loop over (requests still in the mailbox get
// ErrNotRunning) and closes loopDone; it runs once.
func (m *mailbox) endLoop() {
	m.evMu.Lock()
	if m.loopEnded {
		m.evMu.Unlock()
		return
	}
	m.loopEnded = true
	m.reqs = nil
	done := m.loopDone
	m.evMu.Unlock()
	if done != nil {
		close(done)
	}
}

// doneCh returns a channel closed when the loop has ended. It is made on
// demand (by Stop and requests), so that a running elector does not keep
// one.
func (m *mailbox) doneCh() <-chan struct{} {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	if m.loopDone == nil {
		m.loopDone = make(chan struct{})
		if m.loopEnded {
			close(m.loopDone)
		}
	}
	return m.loopDone
}

// poke is the backendkit.Notifier's wake-up; it never blocks. The wake-up is kept
// (woken) until the campaign's next pause takes it; a parked leadership
// is not resumed for it.
func (m *mailbox) poke() {
	m.evMu.Lock()
	if !m.loopEnded {
		m.woken = true
		if !m.parked {
			select {
			case m.mail <- struct{}{}:
			default:
			}
		}
	}
	m.evMu.Unlock()
}

// takeWoken reports whether a wake-up was pushed since the last call.
func (m *mailbox) takeWoken() bool {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	w := m.woken
	m.woken = false
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
