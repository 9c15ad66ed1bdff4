package backendkit

import (
	"sync"
	"time"
)

// ExpiryTracker implements the observed-time expiry rule for backends whose
// store has compare-and-swap but no TTL (S3, plain blob stores): a candidate
// may take over a record only after it has seen the same version unchanged
// for the record's full duration on its own monotonic clock, and must then
// replace it with a compare-and-swap on that version. No clock is ever
// compared with another node's, so clock skew cannot cause an early takeover;
// only a clock that runs more than LeaseDuration−RenewDeadline faster over one
// lease period could.
//
// The cost: a candidate that starts while a dead holder's record sits in the
// store waits a full duration from its first sight of it. The zero value is
// ready to use and safe for concurrent use.
type ExpiryTracker struct {
	mu   sync.Mutex
	seen map[string]observation
}

type observation struct {
	version string
	since   time.Time // local, monotonic
}

// Expired records that election's record has version now and reports whether
// this candidate has seen that same version unchanged for at least d.
func (t *ExpiryTracker) Expired(election, version string, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	o, ok := t.seen[election]
	if !ok || o.version != version {
		if t.seen == nil {
			t.seen = make(map[string]observation)
		}
		t.seen[election] = observation{version: version, since: now}
		return false
	}
	return now.Sub(o.since) >= d
}

// Forget drops what the tracker saw of election (call it after a successful
// write, when the version changed under the caller's own hand).
func (t *ExpiryTracker) Forget(election string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, election)
}
