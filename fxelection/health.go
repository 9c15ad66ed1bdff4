package fxelection

// Health-gated campaigning (Config.HealthCheck): a checker goroutine per
// elector, owned by Start and Stop, sets healthy; attempt skips the store
// while it is false, and a leader that turns unhealthy is sent a request to
// resign (reqUnhealthy), handled by the loop like Resign.

import (
	"context"
	"fmt"
	"time"
)

// startHealth starts the checker when the Config has a HealthCheck; the
// caller (Start) holds e.mu.
func (e *Elector) startHealth() {
	if e.cfg.Health.Check == nil {
		return
	}
	ctx, cancel := context.WithCancel(e.base)
	e.healthCancel, e.healthDone = cancel, make(chan struct{})
	go e.checkHealth(ctx, e.healthDone)
}

// stopHealth cancels the checker and returns a channel closed once it has
// returned (nil when there is none).
func (e *Elector) stopHealth() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.healthCancel == nil {
		return nil
	}
	e.healthCancel()
	return e.healthDone
}

// checkHealth runs HealthCheck at once and then HealthInterval after each
// check ends, until ctx is done.
func (e *Elector) checkHealth(ctx context.Context, done chan struct{}) {
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
		err := e.runHealthCheck(ctx)
		if ctx.Err() != nil {
			return // Stop began: the check's outcome no longer matters
		}
		e.mu.Lock()
		e.healthErr = redactErr(err)
		e.mu.Unlock()
		if err == nil {
			failures = 0
			if !e.healthy.Swap(true) {
				e.log.Info("healthy: campaigning")
				e.poke() // attempt now, not at the next retry
			}
		} else if failures++; failures >= e.cfg.Health.Threshold {
			if e.healthy.Swap(false) {
				e.log.Warn("unhealthy: not campaigning", "failures", failures, "error", redactErr(err).Error())
			}
			// Also when it was unhealthy already: an attempt that began
			// while it was healthy may have won since.
			e.mu.Lock()
			holding := e.term != nil
			e.mu.Unlock()
			if holding {
				e.resignUnhealthy(ctx)
			}
		}
		timer.Reset(e.cfg.Health.Interval)
	}
}

// runHealthCheck makes one check, bounded by HealthInterval; a panic is a
// failure.
func (e *Elector) runHealthCheck(ctx context.Context) (err error) {
	cctx, cancel := context.WithTimeout(ctx, e.cfg.Health.Interval)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("fxelection: HealthCheck panicked: %v", v)
		}
	}()
	return e.cfg.Health.Check(cctx)
}

// resignUnhealthy asks the loop to resign with ReasonUnhealthy and waits
// for its answer, for StopTimeout at most (leader work gets that long
// before the lease is released) or until Stop begins.
func (e *Elector) resignUnhealthy(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.StopTimeout)
	defer cancel()
	if r, err := e.ask(rctx, reqUnhealthy); err == nil && r.err != nil {
		e.log.Warn("unhealthy: releasing the lease failed", "error", r.err.Error())
	}
}
