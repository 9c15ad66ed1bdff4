package lock

import "time"

// Observer receives a Locker's events (Options.Observer). ObserveLock is
// called synchronously, on the goroutine of the acquisition, release or
// renewal, sometimes with a Lock's mutex held: it must not block and must
// not call the Lock's methods.
type Observer interface {
	ObserveLock(Event)
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds. Every acquisition reports one EventAcquire; every Lock
// acquired then reports exactly one of EventRelease and EventLost, when
// its Context ends.
const (
	// EventAcquire: an Acquire, TryAcquire or semaphore call returned;
	// Outcome says how, Wait how long it took.
	EventAcquire EventKind = iota + 1
	// EventRelease: a held Lock was released (its Context ended with
	// ErrReleased; the store's release may still fail and be retried).
	EventRelease
	// EventLost: a held Lock was lost (its Context ended with an error
	// matching ErrLost, which is Err).
	EventLost
)

// Outcome is how an acquisition ended.
type Outcome string

// Outcomes of EventAcquire.
const (
	OutcomeAcquired Outcome = "acquired" // the lock is held
	OutcomeLocked   Outcome = "locked"   // TryAcquire: another holder has it
	OutcomeCanceled Outcome = "canceled" // ctx ended first
	OutcomeClosed   Outcome = "closed"   // the Locker was closed
	OutcomeError    Outcome = "error"    // a store failure (TryAcquire)
)

// Event is one thing that happened to a Locker's lock.
type Event struct {
	Kind EventKind
	// Key is the lock's key, or the semaphore's name.
	Key string
	// Semaphore is the semaphore's size, 0 for a lock.
	Semaphore int
	// Outcome is an EventAcquire's outcome.
	Outcome Outcome
	// Wait is how long an EventAcquire's call took.
	Wait time.Duration
	// Held is how long the Lock was held, for EventRelease and
	// EventLost: from the start of the attempt that took it.
	Held time.Duration
	// Err is the call's error for EventAcquire (nil when acquired), the
	// cause for EventLost.
	Err error
}
