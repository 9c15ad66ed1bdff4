// Package keeper holds leases: it renews one (on the Group's batch grid
// where the backend batches), ends belief at the renew deadline, gives a
// context that ends before the lease can expire in the store, and lets a
// renewal in flight finish when the holder lets go. It also holds the
// library's one set of retry waits (RenewRetry, AttemptRetry).
//
// There is one implementation of holding a lease, Term: one timer, and no
// goroutine, between renewals; it fires at the next renewal or at the
// renew deadline (measured from the start of the last successful renewal,
// on the monotonic clock), whichever is earlier, and calls its Holder; it
// records a successful renewal (ExtendLocked), is the core of the
// holder's context, and carries the Cut a renewal in flight waits under.
// Its holders:
//
//   - the Elector's leadership (package fxelection, term.go), the
//     scale-optimised holder: its hooks wake the Elector's parked state
//     machine, which renews through its batcher (100,000 elections in a
//     process, no goroutine per leader);
//   - Keeper, for package lock (every held Lock, renewed on its Group's
//     batch grid through GroupRenewer) and package pool (its member slot,
//     renewed by re-acquisition, Reacquirer, so that its record counts the
//     renewals): each renewal runs on the goroutine the Term's timer
//     starts when it is due, and its Context ends with a cause.
//
// A change to a timing rule is therefore made once: here.
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
// not write. Its Keeper makes one renewal at a time.
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

// Keeper holds one lease for a holder outside the Elector (a lock, a
// pool's member slot), acquired by an attempt that began at a known time,
// until End. It runs on a Term, as the Elector's leadership does: no
// goroutine between renewals; each renewal runs on the goroutine the
// Term's timer starts when it is due. Its methods are safe for concurrent
// use.
type Keeper struct {
	term   Term
	cfg    *Config
	base   context.Context // the values the Context carries
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex       // the Term's lock too
	lease    backendkit.Lease // as last renewed
	lastErr  error            // the last renewal's failure, for the cause
	unsure   bool             // the last renewal failed: the store may have applied it all the same
	failures int              // renewals failed in a row
	busy     chan struct{}    // closed when the renewal in flight returns; nil when none is
}

// Start keeps lease, acquired by an attempt that began at start, in k, a
// zero Keeper (a holder embeds one, saving an allocation): its Context
// carries base's values (not its cancellation) and ends at
// start+RenewDeadline unless a renewal succeeds first, and the lease is
// renewed until End. It is called once.
//
// cfg may be shared by many Keepers; it must not change once passed.
func (k *Keeper) Start(base context.Context, cfg *Config, lease backendkit.Lease, start time.Time) {
	k.cfg, k.lease = cfg, lease
	k.base = context.WithoutCancel(base)
	k.ctx, k.cancel = context.WithCancelCause(k.base)
	k.mu.Lock()
	k.term.BeginLocked((*holder)(k), cfg.RenewDeadline, start)
	k.term.SetDueLocked(cfg.Renewer.Due(start.Add(cfg.RetryPeriod), cfg.RetryPeriod))
	k.mu.Unlock()
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
	k.mu.Lock()
	k.endLocked(cause)
	busy := k.busy // no renewal starts once ended
	k.mu.Unlock()
	if busy != nil {
		select {
		case <-busy:
		default:
			// Only when the renewal has not returned yet: a done ctx must
			// not win a race with a closed busy.
			select {
			case <-busy:
			case <-ctx.Done():
				return backendkit.Lease{}, false, ctx.Err()
			}
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

// holder is a Keeper as its Term's Holder.
type holder Keeper

// Lock locks the Keeper.
func (h *holder) Lock() { h.mu.Lock() }

// Unlock unlocks the Keeper.
func (h *holder) Unlock() { h.mu.Unlock() }

// OnDue makes the renewal that is due (Keeper.renew).
func (h *holder) OnDue() { (*Keeper)(h).renew() }

// OnDeadline ends the Context at the renew deadline.
func (h *holder) OnDeadline() {
	k := (*Keeper)(h)
	k.mu.Lock()
	defer k.mu.Unlock()
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
	k.term.EndLocked()
	k.term.Cancel()
	if k.cfg.OnEnd != nil {
		k.cfg.OnEnd(cause)
	}
}

// renew makes the renewal that is due, on the calling goroutine (the
// Term's timer's), and sets the next one: RetryPeriod
// after the start of the last successful renewal (on the Renewer's grid),
// sooner after a failed one (RenewRetry).
func (k *Keeper) renew() {
	cfg := k.cfg
	k.mu.Lock()
	if k.ctx.Err() != nil || k.busy != nil {
		k.mu.Unlock()
		return
	}
	busy := make(chan struct{})
	k.busy = busy
	cur, deadline := k.lease, k.term.Expiry()
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.busy = nil
		k.mu.Unlock()
		close(busy)
	}()
	start := time.Now()
	// Not under k.ctx: End ends the Context at once but lets a renewal
	// in flight finish (bounded by the deadline), so that the holder
	// releases the lease as the store last wrote it. A renewal cut
	// short could be applied all the same, and a store that matches
	// the last write on release (PostgreSQL's expires_at) would then
	// free nothing: the next holder would wait out the lease.
	rctx, cancel := context.WithDeadline(k.base, deadline)
	renewed, err := cfg.Renewer.Renew(rctx, cur)
	cancel()
	if cfg.OnRenew != nil {
		cfg.OnRenew(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil:
		k.lease, k.unsure = renewed, false // kept for Stop even once ended
		if k.ctx.Err() != nil || !k.term.ExtendLocked(start) {
			return
		}
		k.lastErr, k.failures = nil, 0
		k.term.SetDueLocked(cfg.Renewer.Due(start.Add(cfg.RetryPeriod), cfg.RetryPeriod))
	case errors.Is(err, backendkit.ErrLeaseLost):
		k.unsure = false
		k.endLocked(fmt.Errorf("%w: %w", cfg.Lost, err))
	default:
		k.lastErr, k.unsure = err, true
		if k.ctx.Err() != nil {
			return
		}
		k.failures++
		k.term.SetDueLocked(time.Now().Add(RenewRetry(cfg.RetryPeriod, k.failures)))
	}
}
