package backendkit

import (
	"errors"
	"time"
)

// MinDurationer is the optional capability of a Backend whose store grants
// no lease shorter than some minimum: Azure Blob refuses durations below
// 15s, etcd grants at least its minimum TTL, memcached counts TTLs in whole
// seconds. A caller that chooses a lease Duration itself (the pool's member
// slots) asks for at least MinLeaseDuration, so that the store neither
// refuses the request nor silently keeps the lease longer than asked.
//
// A wrapper (fault injection, a backend made later) implements it by
// forwarding, and returns 0 while it has no backend to ask.
type MinDurationer interface {
	// MinLeaseDuration returns the shortest AcquireRequest.Duration the
	// store grants as asked; 0 means no minimum.
	MinLeaseDuration() time.Duration
}

// MinLeaseDuration returns b's MinLeaseDuration when b is a MinDurationer,
// and 0 (no minimum) otherwise.
func MinLeaseDuration(b Backend) time.Duration {
	if m, ok := b.(MinDurationer); ok {
		return max(0, m.MinLeaseDuration())
	}
	return 0
}

// ErrDurationRange means the store refused an Acquire for its
// AcquireRequest.Duration: shorter than the store's minimum (Azure Blob:
// 15s) or longer than its maximum. A backend's own error for it (blob's
// ErrDuration, cache's ErrTTLRange) matches it too, so that a caller can
// tell a refused duration from other store failures: it is a setting to
// change, and no retry helps.
var ErrDurationRange = errors.New("fxelection: lease duration outside the store's range")
