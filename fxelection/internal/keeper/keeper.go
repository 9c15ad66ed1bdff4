// Package keeper holds one lease: it renews it (on the Group's batch grid
// where the backend batches), ends belief at the renew deadline, gives a
// context that ends with a cause before the lease can expire in the store,
// and lets a renewal in flight finish when the holder lets go. It also
// holds the library's one set of retry waits (RenewRetry, AttemptRetry).
//
// Who uses it: package lock (every held Lock, renewed on its Group's
// batch grid) and package pool (its member slot, renewed by
// re-acquisition so that its record counts the renewals). The Elector's leadership does not run a Keeper: it is the
// scale-optimised form of the same rules, a parked state machine woken by
// one timer with no goroutine per leader (100,000 elections in a process),
// that shares with Keeper what the rules are made of — the batch grid
// (Renewer.Due is the Group's grid), the retry waits of this package, and
// the renew deadline measured from the start of the last successful
// renewal — so that a change to a timing rule is made once.
package keeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
)

// RenewRetry is the wait before the next renewal after failures (≥ 1)
// renewals in a row failed: RetryPeriod/4 doubling per failure (up to 16
// times), jittered, at most period; sooner than a renewal's usual period,
// because the renew deadline is running out. The Elector, Keeper and
// therefore locks and pools all use it.
func RenewRetry(period time.Duration, failures int) time.Duration {
	return min(period, backoff.Jitter(period/4<<min(failures-1, 4)))
}

// AttemptRetry is the wait before the next attempt to acquire after one
// that found the lease held (failures 0: period, jittered) or after
// failures (≥ 1) store failures in a row (period doubling per failure up
// to maxWait, jittered, never beyond maxWait). The Elector's campaign and
// a Locker's waiters use it.
func AttemptRetry(period, maxWait time.Duration, failures int) time.Duration {
	if failures == 0 {
		return backoff.Jitter(period)
	}
	return min(backoff.Delay(failures, period, maxWait), maxWait)
}

// Renewer renews leases for a Keeper: one Group's (its batch grid when the
// backend renews in batches), or any other renewal a holder makes.
type Renewer interface {
	// Renew renews lease as backendkit.Backend.Renew does; ctx has a
	// deadline. An error matching backendkit.ErrLeaseLost means the lease
	// is gone.
	Renew(ctx context.Context, lease backendkit.Lease) (backendkit.Lease, error)
	// Due returns when a renewal due at due, of a lease renewed every
	// period, is sent: never later than due (on a batch grid, rounded
	// down to its slot).
	Due(due time.Time, period time.Duration) time.Time
}

// GroupRenewer is set by package fxelection when it initializes: given a
// *fxelection.Group it returns the Renewer that renews in the group's
// batches (with its electors' renewals) when its backend batches and with
// one Backend.Renew call otherwise; nil for anything else. It is how
// locks share a group's round trips without the group exporting them.
var GroupRenewer func(group any) Renewer

// Reacquirer renews a lease by acquiring it again as the same
// incarnation, for a holder whose record changes at every renewal (a
// pool's member slot counts its renewals there), which Backend.Renew does
// not write. Its Keeper's goroutine is its only caller.
type Reacquirer struct {
	// Backend is the store.
	Backend backendkit.Backend
	// Request is the Acquire request of renewal n (from 1).
	Request func(n int) backendkit.AcquireRequest

	renewed int // successful renewals so far
}

// Renew re-acquires the lease; a refusal (another holder has it) is an
// error matching backendkit.ErrLeaseLost.
func (r *Reacquirer) Renew(ctx context.Context, _ backendkit.Lease) (backendkit.Lease, error) {
	l, err := r.Backend.Acquire(ctx, r.Request(r.renewed+1))
	switch {
	case err == nil:
		r.renewed++
	case !backendkit.IsStoreFailure(err):
		err = fmt.Errorf("%w: %w", backendkit.ErrLeaseLost, err)
	}
	return l, err
}

// Due is due: re-acquisitions are not batched.
func (r *Reacquirer) Due(due time.Time, _ time.Duration) time.Time { return due }

// Config is what a Keeper keeps a lease with.
type Config struct {
	// Renewer renews the lease. Required.
	Renewer Renewer
	// RenewDeadline bounds how long the Keeper believes in the lease
	// without a successful renewal, from the start of the last successful
	// one (or of the acquisition), on the local monotonic clock; it also
	// bounds each renewal. Shorter than the lease's duration, so that the
	// Context ends before the lease can expire in the store and another
	// holder take it (a lock); at most that duration where a second
	// holder breaks nothing (a pool's member slot).
	RenewDeadline time.Duration
	// RetryPeriod is how often the lease is renewed, from the start of
	// the last successful renewal; sooner after a failed one (RenewRetry).
	RetryPeriod time.Duration
	// Lost is what the Context's cause wraps when the lease was lost: a
	// renewal found it gone, or the renew deadline passed.
	Lost error
	// OnEnd, when set, is called once, when the Context ends, with its
	// cause. It runs with the Keeper's lock held: it must not block or
	// call the Keeper.
	OnEnd func(cause error)
	// OnRenew, when set, is called after every renewal with its error
	// (nil when it succeeded), on the renewing goroutine.
	OnRenew func(err error)
}

// Keeper holds one lease, acquired by an attempt that began at a known
// time, until End; its goroutine renews it. Its methods are safe for
// concurrent use.
type Keeper struct {
	cfg    *Config
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the renewing goroutine returns

	mu        sync.Mutex
	lease     backendkit.Lease // as last renewed
	lastRenew time.Time        // start of the last successful renewal (or the acquisition)
	lastErr   error            // the last renewal's failure, for the cause
	unsure    bool             // the last renewal failed: the store may have applied it all the same
	timer     *time.Timer      // ends ctx at lastRenew+RenewDeadline
}

// Start keeps lease, acquired by an attempt that began at start, in k, a
// zero Keeper (a holder embeds one, saving an allocation): its Context
// carries base's values (not its cancellation) and ends at
// start+RenewDeadline unless a renewal succeeds first, and a goroutine
// renews the lease until End. It is called once.
//
// cfg may be shared by many Keepers; it must not change once passed.
func (k *Keeper) Start(base context.Context, cfg *Config, lease backendkit.Lease, start time.Time) {
	k.cfg, k.done, k.lease, k.lastRenew = cfg, make(chan struct{}), lease, start
	k.ctx, k.cancel = context.WithCancelCause(context.WithoutCancel(base))
	k.mu.Lock() // expire takes it: k.timer is set before it runs
	k.timer = time.AfterFunc(time.Until(start.Add(cfg.RenewDeadline)), k.expire)
	k.mu.Unlock()
	go k.run(start)
}

// Context ends when End is called, when a renewal finds the lease lost,
// or at the renew deadline; context.Cause tells which (End's cause, or an
// error wrapping Config.Lost).
func (k *Keeper) Context() context.Context { return k.ctx }

// Lease returns the lease as last renewed.
func (k *Keeper) Lease() backendkit.Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease.Clone()
}

// End ends the Context with cause (the first cause wins) and the
// renewals; a renewal in flight finishes (within its renew deadline): Stop
// waits for it.
func (k *Keeper) End(cause error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.endLocked(cause)
}

// Stop ends the Context with cause (End) and waits, within ctx, for the
// renewals to stop: a renewal in flight finishes, within its renew
// deadline. It returns the lease as last renewed and whether the last
// renewal's outcome is unknown (it failed, or was cut at its deadline: the
// store may have applied it all the same, and the lease is then not what
// the store last wrote), or ctx's error if the renewals outlast it.
func (k *Keeper) Stop(ctx context.Context, cause error) (lease backendkit.Lease, unsure bool, err error) {
	k.End(cause)
	select {
	case <-k.done:
	default:
		// Only when the goroutine has not returned yet: a done ctx must
		// not win a race with a closed done.
		select {
		case <-k.done:
		case <-ctx.Done():
			return backendkit.Lease{}, false, ctx.Err()
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease, k.unsure, nil
}

// Settle records lease as what the store has, as learned after Stop (a
// re-acquisition that settled an unknown outcome).
func (k *Keeper) Settle(lease backendkit.Lease) {
	k.mu.Lock()
	k.lease, k.unsure = lease, false
	k.mu.Unlock()
}

// expire ends the Context at the renew deadline, unless a renewal moved
// the deadline while the timer fired.
func (k *Keeper) expire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Now().Before(k.lastRenew.Add(k.cfg.RenewDeadline)) {
		return // re-armed by a renewal that raced with the timer
	}
	cause := fmt.Errorf("%w: no renewal succeeded within the renew deadline", k.cfg.Lost)
	if k.lastErr != nil {
		cause = fmt.Errorf("%w: no renewal succeeded within the renew deadline (last error: %w)", k.cfg.Lost, k.lastErr)
	}
	k.endLocked(cause)
}

// endLocked is End with k.mu held.
func (k *Keeper) endLocked(cause error) {
	if k.ctx.Err() != nil {
		return // ended already
	}
	k.cancel(cause)
	k.timer.Stop()
	if k.cfg.OnEnd != nil {
		k.cfg.OnEnd(cause)
	}
}

// run renews the lease every RetryPeriod from the start of the last
// successful renewal (sooner after a failed one; on the Renewer's grid)
// until the Context ends.
func (k *Keeper) run(start time.Time) {
	defer close(k.done)
	cfg := k.cfg
	next := cfg.Renewer.Due(start.Add(cfg.RetryPeriod), cfg.RetryPeriod)
	failures := 0
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-t.C:
		case <-k.ctx.Done():
			t.Stop()
			return
		}
		renewStart := time.Now()
		k.mu.Lock()
		cur, deadline := k.lease, k.lastRenew.Add(cfg.RenewDeadline)
		k.mu.Unlock()
		// Not under k.ctx: End ends the Context at once but lets a renewal
		// in flight finish (bounded by the deadline), so that the holder
		// releases the lease as the store last wrote it. A renewal cut
		// short could be applied all the same, and a store that matches
		// the last write on release (PostgreSQL's expires_at) would then
		// free nothing: the next holder would wait out the lease.
		rctx, cancel := context.WithDeadline(context.WithoutCancel(k.ctx), deadline)
		renewed, err := cfg.Renewer.Renew(rctx, cur)
		cancel()
		if cfg.OnRenew != nil {
			cfg.OnRenew(err)
		}
		switch {
		case err == nil:
			if !k.extend(renewed, renewStart) {
				return
			}
			failures = 0
			next = cfg.Renewer.Due(renewStart.Add(cfg.RetryPeriod), cfg.RetryPeriod)
		case errors.Is(err, backendkit.ErrLeaseLost):
			k.mu.Lock()
			k.unsure = false
			k.endLocked(fmt.Errorf("%w: %w", cfg.Lost, err))
			k.mu.Unlock()
			return
		default:
			k.mu.Lock()
			k.lastErr, k.unsure = err, true
			k.mu.Unlock()
			if k.ctx.Err() != nil {
				return
			}
			failures++
			next = time.Now().Add(RenewRetry(cfg.RetryPeriod, failures))
		}
	}
}

// extend records a successful renewal that started at start and moves the
// renew deadline; false if the Context has ended meanwhile (the renewed
// lease is kept all the same, for Stop).
func (k *Keeper) extend(l backendkit.Lease, start time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lease, k.unsure = l, false
	if k.ctx.Err() != nil {
		return false
	}
	k.lastRenew, k.lastErr = start, nil
	k.timer.Reset(time.Until(start.Add(k.cfg.RenewDeadline)))
	return true
}
