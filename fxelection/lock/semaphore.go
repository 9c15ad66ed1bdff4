package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/names"
)

// MaxSemaphore is the largest semaphore accepted: a waiter tries up to n
// slots per attempt, and subscribes to each of them.
const MaxSemaphore = 1024

// ErrInvalidSemaphore means a semaphore's size is out of range (1 to
// MaxSemaphore).
var ErrInvalidSemaphore = errors.New("lock: invalid semaphore size")

// semaphoreRecord names the record of slot i of semaphore name: a
// derived name, "name#i", which no key can be.
func semaphoreRecord(name string, i int) string { return names.SemaphoreSlot(name, i) }

// checkSemaphore applies the key rule to the records of semaphore name of
// size n (the longest is the last slot's) and checks n.
func checkSemaphore(name string, n int) error {
	if n < 1 || n > MaxSemaphore {
		return fmt.Errorf("%w: %d (must be 1 to %d)", ErrInvalidSemaphore, n, MaxSemaphore)
	}
	if err := checkKey(name); err != nil {
		return err
	}
	if problem := backendkit.NameProblem(semaphoreRecord(name, n-1)); problem != "" {
		return fmt.Errorf("%w: with its slot's suffix: %s", ErrInvalidKey, problem)
	}
	return nil
}

// AcquireSemaphore takes one of the n slots of the semaphore name, waiting
// until one is held or ctx is done, as Acquire does for a lock. The
// semaphore never has more than n holders: each slot is a lock of its own
// (the record "name#i", for i from 0 to n−1), held by one holder at a
// time, with its own fencing term (Lock.Term, strictly increasing per
// slot, not across slots). Every caller must pass the same n for a name: a
// caller that passes a larger n can take slots the others do not see.
//
// What a waiter costs: each attempt tries the slots in turn from a random
// one and stops at the first it takes, so up to n Acquire calls to the
// store when all are held; with push wake-up it subscribes to the n
// records and tries again when any is released, otherwise every
// RetryPeriod (jittered). An invalid name or a name too long for its slot
// records gives an error matching ErrInvalidKey; n out of range,
// ErrInvalidSemaphore.
func (l *Locker) AcquireSemaphore(ctx context.Context, name string, n int) (*Lock, error) {
	if err := checkSemaphore(name, n); err != nil {
		return nil, err
	}
	return l.acquire(ctx, target{name: name, n: n}, true)
}

// TryAcquireSemaphore makes one attempt to take a slot of the semaphore
// name of size n (up to n Acquire calls). When every slot is held the
// error matches ErrLocked and wraps the last slot's *backendkit.HeldError.
func (l *Locker) TryAcquireSemaphore(ctx context.Context, name string, n int) (*Lock, error) {
	if err := checkSemaphore(name, n); err != nil {
		return nil, err
	}
	return l.acquire(ctx, target{name: name, n: n}, false)
}
