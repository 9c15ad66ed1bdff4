package backendkit

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fxelection/fxelection/fxelection"
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
// on every write). The S3 and cache backends wrote the same shape under
// their own format keys before they shared this one; those are still read.
type value struct {
	Format   int             `json:"fxelection_value,omitempty"`
	OldS3    int             `json:"fxelection_s3,omitempty"`
	OldCache int             `json:"fxelection_cache,omitempty"`
	Released bool            `json:"released"`
	Write    string          `json:"write"`
	Record   json.RawMessage `json:"record"`
}

// MarshalValue encodes l (with MarshalRecord) as a store value, marked
// released or not, with a fresh random nonce.
func MarshalValue(l fxelection.Lease, released bool) ([]byte, error) {
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

// UnmarshalValue decodes a value written by MarshalValue and reports its
// lease and whether it was released. The lease must name election, or, with
// election "", any non-empty election. Anything else — larger than
// MaxValueBytes, not a JSON value of a known format, no record, a record
// UnmarshalRecord rejects — gives an error matching
// fxelection.ErrInvalidRecord that quotes no stored bytes unescaped.
func UnmarshalValue(b []byte, election string) (l fxelection.Lease, released bool, err error) {
	if len(b) > MaxValueBytes {
		return fxelection.Lease{}, false, fmt.Errorf("%w: value larger than %d bytes", fxelection.ErrInvalidRecord, MaxValueBytes)
	}
	var v value
	if err := json.Unmarshal(b, &v); err != nil {
		return fxelection.Lease{}, false, fmt.Errorf("%w: not a JSON lease value", fxelection.ErrInvalidRecord)
	}
	switch [3]int{v.Format, v.OldS3, v.OldCache} {
	case [3]int{valueFormat, 0, 0}, [3]int{0, valueFormat, 0}, [3]int{0, 0, valueFormat}:
	default:
		return fxelection.Lease{}, false, fmt.Errorf("%w: unknown value format", fxelection.ErrInvalidRecord)
	}
	if len(v.Record) == 0 {
		return fxelection.Lease{}, false, fmt.Errorf("%w: no record", fxelection.ErrInvalidRecord)
	}
	l, err = UnmarshalRecord(v.Record)
	switch {
	case err != nil:
		return fxelection.Lease{}, false, err
	case l.Election == "":
		return fxelection.Lease{}, false, fmt.Errorf("%w: record without election", fxelection.ErrInvalidRecord)
	case election != "" && l.Election != election:
		return fxelection.Lease{}, false, fmt.Errorf("%w: record of election %q", fxelection.ErrInvalidRecord, l.Election)
	}
	return l, v.Released, nil
}
