package fxelection

// Health-gated campaigning (Config.Health.Check): a checker goroutine per
// elector, started and stopped with it (lifeRule), says whether this
// candidate may campaign. While it may not, attempts are skipped
// (attemptGate); a leader that turns unhealthy is asked to resign
// (ReasonUnhealthy), as Resign does but without sitting out; once healthy
// again the checker pokes the campaign to attempt at once.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// healthPolicy is an elector's health gate and checker.
type healthPolicy struct {
	// healthy is false while Health.Check says this candidate must not
	// campaign: until a first check succeeds, and from Health.Threshold
	// failures in a row.
	healthy atomic.Bool

	mu     sync.Mutex
	err    error // the last failed check's error, nil after a success
	cancel context.CancelFunc
	done   chan struct{}
}

// beforeAttempt skips attempts while unhealthy.
func (h *healthPolicy) beforeAttempt(*Elector) attemptMode {
	if !h.healthy.Load() {
		return modeSkip
	}
	return modeAcquire
}

// afterLook is never called: the gate asks for no look.
func (h *healthPolicy) afterLook(*Elector, error) bool { return true }

// start starts the checker.
func (h *healthPolicy) start(e *Elector) {
	ctx, cancel := context.WithCancel(e.base)
	h.mu.Lock()
	h.cancel, h.done = cancel, make(chan struct{})
	h.mu.Unlock()
	go h.check(e, ctx, h.done)
}

// stop cancels the checker and returns a channel closed once it has
// returned (nil when it never started).
func (h *healthPolicy) stop(*Elector) (<-chan struct{}, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel == nil {
		return nil, ""
	}
	h.cancel()
	return h.done, "Health.Check"
}

// status fills in Status.Healthy and HealthError.
func (h *healthPolicy) status(s *Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.Healthy, s.HealthError = h.healthy.Load(), h.err
}

// check runs Health.Check at once and then Health.Interval after each check
// ends, until ctx is done.
func (h *healthPolicy) check(e *Elector, ctx context.Context, done chan struct{}) {
	defer close(done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		err := runHealthCheck(ctx, e.cfg.Health.Check, e.cfg.Health.Interval)
		if ctx.Err() != nil {
			return // Stop began: the check's outcome no longer matters
		}
		h.mu.Lock()
		h.err = redactErr(err)
		h.mu.Unlock()
		if err == nil {
			failures = 0
			if !h.healthy.Swap(true) {
				e.log.Info("healthy: campaigning")
				e.poke() // attempt now, not at the next retry
			}
		} else if failures++; failures >= e.cfg.Health.Threshold {
			if h.healthy.Swap(false) {
				e.log.Warn("unhealthy: not campaigning", "failures", failures, "error", redactErr(err).Error())
			}
			// Also when it was unhealthy already: an attempt that began
			// while it was healthy may have won since.
			e.mu.Lock()
			holding := e.term != nil
			e.mu.Unlock()
			if holding {
				resignUnhealthy(e, ctx)
			}
		}
		timer.Reset(e.cfg.Health.Interval)
	}
}

// runHealthCheck makes one check, bounded by interval; a panic is a
// failure.
func runHealthCheck(ctx context.Context, check func(context.Context) error, interval time.Duration) (err error) {
	cctx, cancel := context.WithTimeout(ctx, interval)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("fxelection: Health.Check panicked: %v", v)
		}
	}()
	return check(cctx)
}

// resignUnhealthy asks the loop to resign with ReasonUnhealthy and waits
// for its answer, for StopTimeout at most (leader work gets that long
// before the lease is released) or until Stop begins.
func resignUnhealthy(e *Elector, ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.StopTimeout)
	defer cancel()
	if r, err := e.ask(rctx, resignRequest(rctx, ReasonUnhealthy, false, nil)); err == nil && r.err != nil {
		e.log.Warn("unhealthy: releasing the lease failed", "error", r.err.Error())
	}
}
