package backendkit

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// MaxValueBytes bounds a value UnmarshalValue reads: a lease record is
// small, anything larger is foreign and is rejected without being parsed.
const MaxValueBytes = 64 << 10

// valueFormat is the version of the value MarshalValue writes.
const valueFormat = 1

// value is the stored form for stores that keep one value per election and
// replace it with a compare-and-swap (S3 objects, memcached items, NATS KV
// entries): the record, a released flag (a released lease stays in the store
// so that its term survives) and a per-write nonce (no two writes store the
// same bytes, so a version that is a content hash, like an S3 ETag, changes
// on every write).
type value struct {
	Format   int             `json:"fxelection_value,omitempty"`
	Released bool            `json:"released"`
	Write    string          `json:"write"`
	Record   json.RawMessage `json:"record"`
}

// MarshalValue encodes l (with MarshalRecord) as a store value, marked
// released or not, with a fresh random nonce.
func MarshalValue(l Lease, released bool) ([]byte, error) {
	rec, err := MarshalRecord(l)
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("write nonce: %w", err)
	}
	b, err := json.Marshal(value{Format: valueFormat, Released: released, Write: hex.EncodeToString(nonce[:]), Record: rec})
	if err != nil {
		return nil, fmt.Errorf("encode lease value: %w", err)
	}
	return b, nil
}

// Value is a store value decoded by UnmarshalValue.
type Value struct {
	// Lease is the record; its Version is left for the caller to set from
	// the store.
	Lease Lease
	// Released says the lease was released: the value only keeps the term.
	Released bool
	// Write is the value's per-write nonce. With the store's version it
	// names one write uniquely even where versions repeat (a bucket deleted
	// and re-created starts its revisions again), which is what
	// ExpiryTracker must observe.
	Write string
}

// UnmarshalValue decodes a value written by MarshalValue. The lease must
// name election, or, with election "", any non-empty election. Anything
// else — larger than MaxValueBytes, not a JSON value of a known format, no
// record, a record UnmarshalRecord rejects — gives an error matching
// ErrInvalidRecord that quotes no stored bytes unescaped.
func UnmarshalValue(b []byte, election string) (Value, error) {
	if len(b) > MaxValueBytes {
		return Value{}, fmt.Errorf("%w: value larger than %d bytes", ErrInvalidRecord, MaxValueBytes)
	}
	var v value
	if err := json.Unmarshal(b, &v); err != nil {
		return Value{}, fmt.Errorf("%w: not a JSON lease value", ErrInvalidRecord)
	}
	if v.Format != valueFormat {
		return Value{}, fmt.Errorf("%w: unknown value format", ErrInvalidRecord)
	}
	if len(v.Record) == 0 {
		return Value{}, fmt.Errorf("%w: no record", ErrInvalidRecord)
	}
	if len(v.Write) > 64 {
		return Value{}, fmt.Errorf("%w: write nonce longer than 64 bytes", ErrInvalidRecord)
	}
	l, err := UnmarshalRecord(v.Record)
	switch {
	case err != nil:
		return Value{}, err
	case l.Election == "":
		return Value{}, fmt.Errorf("%w: record without election", ErrInvalidRecord)
	case election != "" && l.Election != election:
		return Value{}, fmt.Errorf("%w: record of election %q", ErrInvalidRecord, l.Election)
	}
	return Value{Lease: l, Released: v.Released, Write: v.Write}, nil
}
