package backendkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
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
// and a reader never waits less than the holder asked for. Text is written
// without HTML escaping ('<', '>' and '&' take one byte, not six), so a
// record is at most twice the size of its texts, plus their quotes; every
// JSON reader, UnmarshalRecord included, reads both spellings.
func MarshalRecord(l Lease) ([]byte, error) {
	ms := l.Duration.Milliseconds()
	if l.Duration%time.Millisecond > 0 {
		ms++
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(wireRecord{
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
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalRecord decodes a record written by MarshalRecord and validates it
// with Lease.Validate. Anything else — garbage, another program's value, an
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
		Election:    w.Election,
		Holder:      w.Holder,
		Incarnation: w.Incarnation,
		Metadata:    w.Metadata,
		Term:        w.Term,
		Duration:    d,
		AcquiredAt:  w.AcquiredAt,
	}
	if err := l.Validate(); err != nil {
		return Lease{}, err
	}
	return l, nil
}

// DurationFromMillis converts a stored duration in milliseconds, rejecting
// values that are not positive or exceed MaxRecordDuration (so that a huge
// value cannot wrap to a negative time.Duration and make a live lease look
// expired). The error matches ErrInvalidRecord.
func DurationFromMillis(ms int64) (time.Duration, error) {
	if ms <= 0 || ms > MaxRecordDuration.Milliseconds() {
		return 0, fmt.Errorf("%w: duration %d ms out of range", ErrInvalidRecord, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// NextTerm returns the term for a new holder after prev: the larger of
// prev+1 and now in microseconds since the Unix epoch. Seeding terms from a
// clock keeps them rising even when the record holding prev is lost (deleted
// out of band, evicted, or on a store restarted empty, where prev reads as
// 0): a later holder's clock is past the microsecond at which the lost term
// was handed out, unless that clock lags by more than the time since. It
// returns ErrTermExhausted instead of passing MaxTerm.
func NextTerm(prev uint64, now time.Time) (uint64, error) {
	if prev >= MaxTerm {
		return 0, ErrTermExhausted
	}
	next := prev + 1
	if us := now.UnixMicro(); us > 0 && uint64(us) > next && uint64(us) <= MaxTerm {
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
// live value, else NextTerm of the value's term (a released or
// expired value, a new incarnation of its holder, or none at all), or a
// *HeldError when someone else holds it. It is the one place
// these backends apply the contract's rule for terms.
func Claim(req AcquireRequest, cur Value, found bool, expired func() bool, now time.Time) (Lease, error) {
	if err := req.Validate(); err != nil {
		return Lease{}, err
	}
	next := Lease{
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
		return Lease{}, &HeldError{Holder: cur.Lease}
	}
	if next.Term == 0 {
		t, err := NextTerm(prev, now)
		if err != nil {
			return Lease{}, err
		}
		next.Term = t
	}
	return next, nil
}

// CheckTransfer checks a Transfer's request before the backend reads
// anything: req must pass AcquireRequest.Validate, and it must be for
// lease's election (an error matching ErrLeaseLost otherwise: that lease
// cannot be handed over in req's election).
func CheckTransfer(lease Lease, req AcquireRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Election != lease.Election {
		return fmt.Errorf("%w: the request is for another election", ErrLeaseLost)
	}
	return nil
}

// ClaimTransfer returns the record a Transfer writes over cur, the caller's
// own value (read and matched by the backend), on a store that keeps one
// value per election: what Claim decides for req once cur is released, so
// the release and the successor's acquisition are one write. Its term is
// NextTerm of cur's, strictly above every term the election had.
func ClaimTransfer(req AcquireRequest, cur Value, now time.Time) (Lease, error) {
	cur.Released = true
	return Claim(req, cur, true, nil, now)
}
