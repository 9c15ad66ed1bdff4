package fxelection

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// recordFormat is the version of the encoding written by MarshalRecord.
const recordFormat = 1

// wireRecord is the JSON form of a Lease stored by blob-like backends.
type wireRecord struct {
	Format     int               `json:"fxelection"`
	Election   string            `json:"election"`
	Holder     string            `json:"holder"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Term       uint64            `json:"term"`
	DurationMS int64             `json:"duration_ms"`
	AcquiredAt time.Time         `json:"acquired_at,omitzero"`
}

// MarshalRecord encodes l for backends that store a record as one value (S3
// objects, cache entries, the in-memory backend). Version and ExpiresAt are
// not encoded: they belong to the store. The duration is stored in whole
// milliseconds, rounded up, so that a positive duration never becomes zero
// and a reader never waits less than the holder asked for.
func MarshalRecord(l Lease) ([]byte, error) {
	ms := l.Duration.Milliseconds()
	if l.Duration%time.Millisecond > 0 {
		ms++
	}
	b, err := json.Marshal(wireRecord{
		Format:     recordFormat,
		Election:   l.Election,
		Holder:     l.Holder,
		Metadata:   l.Metadata,
		Term:       l.Term,
		DurationMS: ms,
		AcquiredAt: l.AcquiredAt.UTC().Round(0),
	})
	if err != nil {
		return nil, fmt.Errorf("encode lease record: %w", err)
	}
	return b, nil
}

// UnmarshalRecord decodes a record written by MarshalRecord and validates it
// with CheckLease. Anything else — garbage, another program's value, an
// unknown format, a holder that is not printable UTF-8, a duration that is
// out of range — gives an error matching ErrInvalidRecord, never a panic.
func UnmarshalRecord(b []byte) (Lease, error) {
	if !utf8.Valid(b) {
		// encoding/json would silently turn invalid bytes into U+FFFD.
		return Lease{}, fmt.Errorf("%w: record is not valid UTF-8", ErrInvalidRecord)
	}
	var w wireRecord
	if err := json.Unmarshal(b, &w); err != nil {
		return Lease{}, fmt.Errorf("%w: not a JSON lease record", ErrInvalidRecord)
	}
	if w.Format != recordFormat {
		return Lease{}, fmt.Errorf("%w: unknown format %d", ErrInvalidRecord, w.Format)
	}
	d, err := DurationFromMillis(w.DurationMS)
	if err != nil {
		return Lease{}, err
	}
	l := Lease{
		Election:   w.Election,
		Holder:     w.Holder,
		Metadata:   w.Metadata,
		Term:       w.Term,
		Duration:   d,
		AcquiredAt: w.AcquiredAt,
	}
	if err := CheckLease(l); err != nil {
		return Lease{}, err
	}
	return l, nil
}

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
