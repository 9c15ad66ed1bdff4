package caslease

import (
	"errors"
	"sync"
)

// refusal is the watch the store refused (ErrWatchRefused), reported
// once: logged when it starts, and returned by the first Acquire that
// would have told its caller that someone else holds the lease.
type refusal struct {
	mu      sync.Mutex
	on      bool  // the last watch attempt was refused
	pending error // not yet returned by an Acquire
}

// watchFailed records the error of a watch attempt: if it matches
// ErrWatchRefused and the previous attempt was not refused, a refusal
// starts and is logged.
func (b *Backend) watchFailed(err error) {
	if !errors.Is(err, ErrWatchRefused) {
		return
	}
	b.refusal.mu.Lock()
	started := !b.refusal.on
	if started {
		b.refusal.on, b.refusal.pending = true, err
	}
	b.refusal.mu.Unlock()
	if started && b.opts.Logger != nil {
		b.opts.Logger.Warn(b.opts.Name+": push wake-up is off and followers poll until the watch is allowed",
			"error", b.Redact(err).Error()) // err says the watch was refused, and why
	}
}

// watchAllowed records an established watch, ending a refusal (logged).
func (b *Backend) watchAllowed() {
	b.refusal.mu.Lock()
	was := b.refusal.on
	b.refusal.on, b.refusal.pending = false, nil
	b.refusal.mu.Unlock()
	if was && b.opts.Logger != nil {
		b.opts.Logger.Info(b.opts.Name + ": the watch is allowed again; push wake-up is on")
	}
}

// takeRefusal returns the refusal not yet reported to a caller, once.
func (b *Backend) takeRefusal() error {
	b.refusal.mu.Lock()
	defer b.refusal.mu.Unlock()
	err := b.refusal.pending
	b.refusal.pending = nil
	return err
}
