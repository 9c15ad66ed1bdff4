package backendkit

import (
	"sync"
	"time"
)

// ExpiryTracker implements the observed-time expiry rule for backends whose
// store has compare-and-swap but no TTL (S3, NATS KV): a candidate may take
// over a record only after it has seen the same write unchanged for the
// record's full duration on its own monotonic clock, and must then replace
// it with a compare-and-swap on that version. No clock is ever compared
// with another node's, so clock skew cannot cause an early takeover; only a
// clock that runs more than LeaseDuration−RenewDeadline faster over one
// lease period could.
//
// A write is named by the store's version and the value's per-write nonce
// (Value.Write) together: a version alone can repeat (a NATS bucket deleted
// and re-created numbers its revisions from 1 again, as does any store
// restarted empty), and a follower that took a new leader's revision 1 for
// the old one it had watched for a lease would take over at once. Callers
// Forget an election whenever its key is missing or a read fails, so that
// no observation spans a gap in what they saw.
//
// The cost: a candidate that starts while a dead holder's record sits in the
// store waits a full duration from its first sight of it. The zero value is
// ready to use and safe for concurrent use.
type ExpiryTracker struct {
	mu   sync.Mutex
	seen map[string]observation
}

type observation struct {
	version, write string
	since          time.Time // local, monotonic
}

// Expired records that election's record is now the write named by
// version and nonce and reports whether this candidate has seen that same
// write unchanged for at least d.
func (t *ExpiryTracker) Expired(election, version, nonce string, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	o, ok := t.seen[election]
	if !ok || o.version != version || o.write != nonce {
		if t.seen == nil {
			t.seen = make(map[string]observation)
		}
		t.seen[election] = observation{version: version, write: nonce, since: now}
		return false
	}
	return now.Sub(o.since) >= d
}

// Forget drops what the tracker saw of election: call it after a
// successful write (the version changed under the caller's own hand), when
// the key is missing, and when a read fails.
func (t *ExpiryTracker) Forget(election string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, election)
}
