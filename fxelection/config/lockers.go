package config

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/lock"
)

// Locker is one Locker in a Document: the JSON form of lock.Options (which
// see for every field's meaning, default and limits) plus the backend its
// locks are taken on. It names a *lock.Locker, not a lock: the code that
// injects it chooses each lock's key when it calls Acquire (a key follows
// the rule for election names, and must not also be the name of an
// election on the same store).
type Locker struct {
	// Name is the Locker's fx name tag (`name:"<name>"`) and its name in a
	// Runtime (Runtime.Locker): unique among the document's lockers, of
	// ASCII letters, digits and "_.-:/". It is not written to the store.
	// Required.
	Name string `json:"name" config:"required"`
	// Identity is lock.Options.Identity: at most lock.MaxIdentityLen
	// bytes of printable UTF-8. Default: host, pid and a random suffix.
	Identity string `json:"identity,omitempty"`
	// LeaseDuration is lock.Options.LeaseDuration. Default: 15s.
	LeaseDuration Duration `json:"lease_duration,omitempty"`
	// RenewDeadline is lock.Options.RenewDeadline. Default: 10s.
	RenewDeadline Duration `json:"renew_deadline,omitempty"`
	// RetryPeriod is lock.Options.RetryPeriod. Default: 2s.
	RetryPeriod Duration `json:"retry_period,omitempty"`
	// Backend is the backend module, inline or by name, as an election's.
	// Required.
	Backend BackendRef `json:"backend" config:"required"`
}

// Options returns l as lock.Options (Observer unset).
func (l Locker) Options() lock.Options {
	return lock.Options{
		Identity: l.Identity,
		Timing: fxelection.Timing{
			LeaseDuration: time.Duration(l.LeaseDuration),
			RenewDeadline: time.Duration(l.RenewDeadline),
			RetryPeriod:   time.Duration(l.RetryPeriod),
		},
	}
}

// validateLockers checks doc's lockers (see Document.Validate), reporting
// each problem at its path with fail; backends are checked as an
// election's and marked in used.
func (doc *Document) validateLockers(used map[string]bool, fail func(string, error)) {
	names := map[string]int{}
	for i, l := range doc.Lockers {
		path := "lockers[" + strconv.Itoa(i) + "]"
		switch j, dup := names[l.Name]; {
		case l.Name == "":
			fail(path+".name", ErrRequired)
		case !validFxName(l.Name):
			fail(path+".name", fmt.Errorf("%w: a locker name is its fx name tag: want 1 to %d ASCII letters, digits or _.-:/", ErrInvalidValue, backendkit.MaxNameLen))
		case dup:
			fail(path+".name", fmt.Errorf("%w: locker name already used by lockers[%d]", ErrInvalidValue, j))
		default:
			names[l.Name] = i
		}
		doc.validateBackendRef(path+".backend", l.Backend, used, fail)
		// lock.Options' field names are fxelection.Config's, and its
		// errors *fxelection.ConfigErrors: they map as an election's.
		if err := l.Options().Validate(); err != nil {
			fail(configPath(path, err), err)
		} else {
			doc.checkRenewLimit(path, l.Backend, l.RenewDeadline, fail)
		}
	}
}

// newLocker makes l's Locker on prov's backend, in the group of the
// module's electors (its renewals share their batches), reporting to obs
// unless nil. It does no I/O and starts nothing.
func newLocker(l Locker, prov *provisioned, obs lock.Observer) (*lock.Locker, error) {
	opts := l.Options()
	opts.Observer = obs
	return lock.NewInGroup(prov.group, opts)
}

// closeLocker closes l (releasing its locks), returning by ctx's end even
// when the backend ignores its context (the release then goes on in the
// background; a lock it cannot release expires).
func closeLocker(ctx context.Context, l *lock.Locker) error {
	done := make(chan error, 1) // buffered: a late Close never blocks
	go func() { done <- l.Close(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("lock: close: %w", ctx.Err())
	}
}
