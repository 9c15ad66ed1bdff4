package fxelection

import (
	"errors"
	"fmt"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Backend is the store an Elector campaigns on: one lease record per
// election, changed atomically. Applications get one from a backend module
// (modules/redis, modules/postgres, …); its contract, for those who write
// one, is in package backendkit.
type Backend = backendkit.Backend

// Lease is one election's lease record: who holds it, what they advertise
// and the fencing term (Lease.Term) that names one leadership. See
// backendkit.Lease for every field.
type Lease = backendkit.Lease

var (
	// ErrNotRunning is returned by Elector methods that need a started,
	// not yet stopped elector.
	ErrNotRunning = errors.New("fxelection: elector not running")
	// ErrStopped is returned by Start after Stop: an Elector is not restartable.
	ErrStopped = errors.New("fxelection: elector stopped")
)

// OpError is a store failure during one elector operation, as delivered to
// error callbacks and observers.
type OpError struct {
	// Election is the election's name.
	Election string
	// Op is the operation (backendkit.OpAcquire, OpRenew or OpRelease from
	// an Elector, backendkit.OpGet from a watch.Watcher; handover.OpHandOver
	// or OpPreempt from a hand-over).
	Op string
	// Err is the backend's error.
	Err error
}

// Error implements error.
func (e *OpError) Error() string {
	return fmt.Sprintf("fxelection: %s %q: %v", e.Op, e.Election, e.Err)
}

// Unwrap returns the backend's error.
func (e *OpError) Unwrap() error { return e.Err }
