package etcdlease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// recordFormat is the version of the value format this package writes.
const recordFormat = 1

// maxValueBytes bounds a value the decoder looks at: the largest record
// this package writes (holder, metadata, numbers, JSON quoting of every
// byte) is well below it, and a larger value is refused before parsing.
const maxValueBytes = 64 << 10

// wireRecord is the JSON value of an election's key. The term, the version
// and the expiry are not in it: they are the key's create revision, its
// etcd lease and that lease's TTL, all kept by etcd itself. That is why it
// is not backendkit.MarshalRecord's record, which carries the term: the
// create revision is assigned by the very write that stores the value.
type wireRecord struct {
	Format     int               `json:"fxelection"`
	Holder     string            `json:"holder"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	DurationMS int64             `json:"duration_ms"`
}

// encodeRecord returns the value written for holder. The duration is stored
// in whole milliseconds, rounded up, so a positive duration never becomes
// zero.
func encodeRecord(holder string, metadata map[string]string, d time.Duration) (string, error) {
	ms := d.Milliseconds()
	if d%time.Millisecond > 0 {
		ms++
	}
	b, err := json.Marshal(wireRecord{Format: recordFormat, Holder: holder, Metadata: metadata, DurationMS: ms})
	if err != nil {
		return "", fmt.Errorf("encode lease record: %w", err)
	}
	return string(b), nil
}

// storedKey is what the decoder needs of an etcd key-value pair: its value
// and etcd's own metadata. Tests and fuzz targets build it directly.
type storedKey struct {
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Lease          int64
}

// decodeRecord turns election's stored key into a Lease and validates every
// field: the value must be this package's JSON record (valid UTF-8, known
// format, no unknown or duplicate trailing data), the create revision (the
// term) in [1, fxelection.MaxTerm], the mod revision not below it, the key
// attached to an etcd lease (a key without one would never expire), and the
// lease as a whole accepted by Lease.Validate. Anything else gives
// an error matching fxelection.ErrInvalidRecord that quotes no stored
// value; it never panics.
func decodeRecord(election string, k storedKey) (fxelection.Lease, error) {
	bad := func(format string, args ...any) (fxelection.Lease, error) {
		return fxelection.Lease{}, fmt.Errorf("%w: %s", fxelection.ErrInvalidRecord, fmt.Sprintf(format, args...))
	}
	switch {
	case k.CreateRevision <= 0:
		return bad("create revision %d is not positive", k.CreateRevision)
	case k.ModRevision < k.CreateRevision:
		return bad("mod revision %d below create revision %d", k.ModRevision, k.CreateRevision)
	case k.Lease <= 0:
		return bad("key is not attached to an etcd lease (it would never expire)")
	case len(k.Value) > maxValueBytes:
		return bad("value of %d bytes exceeds %d", len(k.Value), maxValueBytes)
	case !utf8.Valid(k.Value):
		// encoding/json would silently turn invalid bytes into U+FFFD.
		return bad("value is not valid UTF-8")
	}
	var w wireRecord
	dec := json.NewDecoder(bytes.NewReader(k.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return bad("not a JSON lease record")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("trailing data after the lease record")
	}
	if w.Format != recordFormat {
		return bad("unknown format %d", w.Format)
	}
	d, err := backendkit.DurationFromMillis(w.DurationMS)
	if err != nil {
		return fxelection.Lease{}, err
	}
	l := fxelection.Lease{
		Election: election,
		Holder:   w.Holder,
		Metadata: maps.Clone(w.Metadata),
		Term:     uint64(k.CreateRevision),
		Version:  formatLeaseID(k.Lease),
		Duration: d,
	}
	if len(l.Metadata) == 0 {
		l.Metadata = nil
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	return l, nil
}

// formatLeaseID is the Lease.Version of an etcd lease: its ID in
// hexadecimal, as etcdctl prints it.
func formatLeaseID(id int64) string { return strconv.FormatInt(id, 16) }

// parseLeaseID reads a Lease.Version written by formatLeaseID.
func parseLeaseID(v string) (int64, bool) {
	id, err := strconv.ParseInt(v, 16, 64)
	if err != nil || id <= 0 || formatLeaseID(id) != v {
		return 0, false
	}
	return id, true
}
