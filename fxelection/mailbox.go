package fxelection

// The loop's mailbox: requests (TryAcquire, Resign) and events (timers,
// Stop) for the campaign loop, and whether the loop is parked. Who wakes a
// parked loop owns it: post and signal report it (resume), and the caller
// then runs the loop's next step (Elector.leadStep).

// post puts r in the loop's mailbox and wakes the loop; posted is false if
// the loop has ended, resume says the caller must resume it.
func (e *Elector) post(r request) (posted, resume bool) {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if e.loopEnded {
		return false, false
	}
	e.mailbox = append(e.mailbox, r)
	return true, e.wakeLoop()
}

// signal records ev for the loop and wakes it; resume says the caller must
// resume it.
func (e *Elector) signal(ev loopEvent) (resume bool) {
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
func (e *Elector) wakeLoop() bool {
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
func (e *Elector) nextRequest() (request, bool) {
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if len(e.mailbox) == 0 {
		return request{}, false
	}
	r := e.mailbox[0]
	e.mailbox[0] = request{}
	e.mailbox = e.mailbox[1:]
	if len(e.mailbox) == 0 {
		e.mailbox = nil
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
func (e *Elector) requeue(rs []request) {
	e.evMu.Lock()
	e.mailbox = append(rs, e.mailbox...)
	select {
	case e.mail <- struct{}{}:
	default:
	}
	e.evMu.Unlock()
}

// endLoop marks the loop over (requests still in the mailbox get
// ErrNotRunning) and closes loopDone; it runs once.
func (e *Elector) endLoop() {
	e.evMu.Lock()
	if e.loopEnded {
		e.evMu.Unlock()
		return
	}
	e.loopEnded = true
	e.mailbox = nil
	done := e.loopDone
	e.evMu.Unlock()
	if done != nil {
		close(done)
	}
}

// doneCh returns a channel closed when the loop has ended. It is made on
// demand (by Stop and requests), so that a running elector does not keep
// one.
func (e *Elector) doneCh() <-chan struct{} {
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
