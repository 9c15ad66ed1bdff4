package backendkit

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
)

// recordFormat is the version of the encoding written by MarshalRecord.
const recordFormat = 1

// wireRecord is the JSON form of a Lease stored by blob-like backends.
type wireRecord struct {
	Format      int               `json:"fxelection"`
	Election    string            `json:"election"`
	Holder      string            `json:"holder"`
	Incarnation string            `json:"incarnation,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Term        uint64            `json:"term"`
	DurationMS  int64             `json:"duration_ms"`
	AcquiredAt  time.Time         `json:"acquired_at,omitzero"`
}

// MarshalRecord encodes l for backends that store a record as one value (S3
// objects, cache entries). Version and ExpiresAt are
// not encoded: they belong to the store. The duration is stored in whole
// milliseconds, rounded up, so that a positive duration never becomes zero
// and a reader never waits less than the holder asked for.
func MarshalRecord(l fxelection.Lease) ([]byte, error) {
	ms := l.Duration.Milliseconds()
	if l.Duration%time.Millisecond > 0 {
		ms++
	}
	b, err := json.Marshal(wireRecord{
		Format:      recordFormat,
		Election:    l.Election,
		Holder:      l.Holder,
		Incarnation: l.Incarnation,
		Metadata:    l.Metadata,
		Term:        l.Term,
		DurationMS:  ms,
		AcquiredAt:  l.AcquiredAt.UTC().Round(0),
	})
	if err != nil {
		return nil, fmt.Errorf("encode lease record: %w", err)
	}
	return b, nil
}

// UnmarshalRecord decodes a record written by MarshalRecord and validates it
// with Lease.Validate. Anything else — garbage, another program's value, an
// unknown format, a holder that is not printable UTF-8, a duration that is
// out of range — gives an error matching backendkit.ErrInvalidRecord, never a panic.
func UnmarshalRecord(b []byte) (fxelection.Lease, error) {
	if !utf8.Valid(b) {
		// encoding/json would silently turn invalid bytes into U+FFFD.
		return fxelection.Lease{}, fmt.Errorf("%w: record is not valid UTF-8", backendkit.ErrInvalidRecord)
	}
	var w wireRecord
	if err := json.Unmarshal(b, &w); err != nil {
		return fxelection.Lease{}, fmt.Errorf("%w: not a JSON lease record", backendkit.ErrInvalidRecord)
	}
	if w.Format != recordFormat {
		return fxelection.Lease{}, fmt.Errorf("%w: unknown format %d", backendkit.ErrInvalidRecord, w.Format)
	}
	d, err := DurationFromMillis(w.DurationMS)
	if err != nil {
		return fxelection.Lease{}, err
	}
	l := fxelection.Lease{
		Election:    w.Election,
		Holder:      w.Holder,
		Incarnation: w.Incarnation,
		Metadata:    w.Metadata,
		Term:        w.Term,
		Duration:    d,
		AcquiredAt:  w.AcquiredAt,
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	return l, nil
}

// DurationFromMillis converts a stored duration in milliseconds, rejecting
// values that are not positive or exceed backendkit.MaxRecordDuration (so that a huge
// value cannot wrap to a negative time.Duration and make a live lease look
// expired). The error matches backendkit.ErrInvalidRecord.
func DurationFromMillis(ms int64) (time.Duration, error) {
	if ms <= 0 || ms > backendkit.MaxRecordDuration.Milliseconds() {
		return 0, fmt.Errorf("%w: duration %d ms out of range", backendkit.ErrInvalidRecord, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// NextTerm returns the term for a new holder after prev: the larger of
// prev+1 and now in microseconds since the Unix epoch. Seeding terms from a
// clock keeps them rising even when the record holding prev is lost (deleted
// out of band, evicted, or on a store restarted empty, where prev reads as
// 0): a later holder's clock is past the microsecond at which the lost term
// was handed out, unless that clock lags by more than the time since. It
// returns backendkit.ErrTermExhausted instead of passing backendkit.MaxTerm.
func NextTerm(prev uint64, now time.Time) (uint64, error) {
	if prev >= backendkit.MaxTerm {
		return 0, backendkit.ErrTermExhausted
	}
	next := prev + 1
	if us := now.UnixMicro(); us > 0 && uint64(us) > next && uint64(us) <= backendkit.MaxTerm {
		next = uint64(us)
	}
	return next, nil
}

// Claim decides an Acquire on a store that keeps one value per election
// and replaces it with a compare-and-swap (S3 objects, cache entries): cur
// is the value read (found false when there is none) and expired, on an
// observed-time store, reports whether cur may be taken over now (nil on a
// store whose TTL removes expired values). It returns the lease to write
// with the version read: the caller's continued term when req.Continues a
// live value, else backendkit.NextTerm of the value's term (a released or
// expired value, a new incarnation of its holder, or none at all), or a
// *backendkit.HeldError when someone else holds it. It is the one place
// these backends apply the contract's rule for terms.
func Claim(req backendkit.AcquireRequest, cur Value, found bool, expired func() bool, now time.Time) (fxelection.Lease, error) {
	if err := req.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	next := fxelection.Lease{
		Election:    req.Election,
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    req.Metadata,
		Duration:    req.Duration,
		AcquiredAt:  now,
	}
	var prev uint64 // the term a new leadership must exceed; 0 when no value survives
	switch {
	case !found:
	case cur.Released:
		prev = cur.Lease.Term
	case req.Continues(cur.Lease):
		next.Term, next.AcquiredAt = cur.Lease.Term, cur.Lease.AcquiredAt
	case cur.Lease.Holder == req.Identity, expired != nil && expired():
		prev = cur.Lease.Term
	default:
		return fxelection.Lease{}, &backendkit.HeldError{Holder: cur.Lease}
	}
	if next.Term == 0 {
		t, err := NextTerm(prev, now)
		if err != nil {
			return fxelection.Lease{}, err
		}
		next.Term = t
	}
	return next, nil
}
