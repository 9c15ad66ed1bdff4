// Package lock provides fenced locks on any fxelection Backend: a lock on
// one key for one critical section, taken by whichever caller gets there
// first, with a deadline on the wait.
//
//	locker, err := lock.New(backend, lock.Options{})
//	…
//	l, err := locker.Acquire(ctx, "nightly-report")
//	if err != nil {
//		return err // ctx ended before the lock was held
//	}
//	defer l.Release(context.Background())
//	work(l.Context(), l.Term()) // guard external writes with the term
//
// # Why a package of its own
//
// An Elector is a campaign loop that runs for the life of the process:
// events, callbacks, health checks, priorities, fx hooks. A lock is taken
// for a critical section that may last 200 ms and is then given back; it
// needs none of that. The lock uses only the Backend contract (package
// backendkit), as packages pool and watch do, so it works on every backend
// and leaves the core's API unchanged; each key is one lease record, the
// key its election name, so a key must not also be used as the name of an
// election on the same backend. A key follows the rule of election names
// (no '#', which names the library's own records: a semaphore's slots).
//
// # What a lock guarantees
//
// A held Lock is a lease renewed every RetryPeriod, as an elector's
// leadership is: it holds a timer, not a goroutine, between renewals, and
// each renewal runs on a goroutine of its own while it lasts. On a backend
// that renews in batches (backendkit.BatchRenewer: Redis, PostgreSQL, the
// in-memory backend) renewals are aligned to a grid of RetryPeriod/64
// slots and sent together: the Locker's locks due in one slot, and with
// NewInGroup the group's electors' too, cost one round trip; elsewhere
// (etcd and every other backend) each renewal is one Renew call. Its
// Context ends when the Lock is released, when a renewal finds the lease
// lost, and when no renewal has succeeded within RenewDeadline of the
// start of the last successful one (the acquisition counts as one),
// measured on the local monotonic clock. Because RenewDeadline is shorter
// than LeaseDuration, the Context ends before the lease can expire in the
// store and before any other caller can take the lock: the difference is
// the margin for clock-rate drift and scheduling delays, as for an
// Elector's leader context.
//
// That is all a lease can promise. A process paused for longer than
// LeaseDuration−RenewDeadline (a GC pause, a stopped VM, a slow disk)
// resumes with its Context not yet ended while another holder already has
// the lock; so does a write that was sent before the Context ended and
// arrives after. A lock without fencing cannot protect against either.
// Term is the fencing token that does: it strictly increases per key every
// time the lock is taken, by whatever holder (each acquisition is an
// incarnation of its own, so two acquisitions by the same Locker get
// different terms too), and a store that refuses writes carrying a term
// lower than the highest it has seen (package fence and its guards for
// PostgreSQL and Redis) is never corrupted by a holder that lost the lock
// without knowing. The term is as durable as the backend keeps it; the
// README's guarantees table says what each backend promises.
//
// # Waiting
//
// Acquire tries at once, then again whenever the backend reports a release
// (push wake-up, on backends that implement backendkit.Notifier, such as
// the in-memory backend, Redis and PostgreSQL) and otherwise every
// RetryPeriod to 1.2 × RetryPeriod, jittered; store failures back off
// exponentially from RetryPeriod up to LeaseDuration. A waiter costs one
// Acquire call per attempt and, with push, one subscription, taken only
// once the first attempt was refused (it may cost a connection: a Redis
// pub/sub connection, a PostgreSQL LISTEN session) and followed by one
// more attempt at once; it never spins. An uncontended Acquire costs one
// Acquire call and nothing else. A lock that expires rather than being
// released wakes nobody: its waiters take it at their next poll.
//
// # Giving up
//
// ctx bounds the wait, not the store call: an attempt's call runs on a
// context of its own (ctx's values, RenewDeadline from its start), and
// Acquire returns as soon as ctx ends, even while the call is in flight or
// the backend ignores its context. A call abandoned so that wins all the
// same (the store granted the lease, the reply came late) releases the
// lease as soon as it returns; an acquisition that ends after a call whose
// outcome is unknown (a store failure, a call cut at its deadline) is given
// back by re-acquiring as its incarnation, which keeps the lease and its
// term if the store granted it, and releasing. So no key is left held by
// nobody for LeaseDuration because a caller gave up at the wrong moment.
// Likewise a renewal that failed or was cut may have been applied: Release
// then re-acquires as the Lock's incarnation before releasing, so that a
// store that matches the last write on release (PostgreSQL's expires_at)
// frees the key. Give-backs run in the background, each store call bounded
// by RenewDeadline; Close waits for them.
//
// # Semaphores
//
// AcquireSemaphore(ctx, name, n) takes one of n slots: slot i is an
// ordinary lock on the record "name#i", so a semaphore never has more
// than n holders on any backend, and each holder has the fencing term of
// its slot (strictly increasing per slot, not across slots). A waiter
// tries the slots in turn from a random one: up to n Acquire calls per
// attempt, n subscriptions with push wake-up. Every caller of one name
// must use the same n.
//
// # Shutting down and metrics
//
// Locker.Close releases every Lock still held and wakes waiters with
// ErrClosed; the fx module (Module, or Named for several Lockers) calls
// it on stop, as package config does for the Lockers a document declares
// under "lockers". Options.Observer receives an Event for every acquisition (its Outcome and wait) and for
// the end of every Lock (released or lost); package metrics turns them
// into series.
//
// A lock is not reentrant: a second Acquire of a held key waits, even from
// the same Locker. A Lock whose holder neither releases it nor exits keeps
// it, renewed, for as long as renewals succeed; always Release it. A
// process that dies without releasing leaves the lock to expire after
// LeaseDuration.
package lock
