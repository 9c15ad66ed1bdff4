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

// recordFormat is the version of the value format this package writes,
// the only one it reads: its term is the key's mod revision unless the
// value states one.
const recordFormat = 2

// maxValueBytes bounds a value the decoder looks at: the largest record
// this package writes (holder, metadata, numbers, JSON quoting of every
// byte) is well below it, and a larger value is refused before parsing.
const maxValueBytes = 64 << 10

// wireRecord is the JSON value of an election's key. The version and the
// expiry are not in it: they are the key's etcd lease and that lease's TTL,
// kept by etcd itself. Nor, on the write that starts a leadership, is the
// term: it is that write's own revision (the key's mod revision), which
// etcd assigns as it applies the write, so no value can state it in
// advance. A later put that continues the leadership (a re-acquisition by
// the same incarnation, a renewal moving the key to a longer etcd lease)
// states the term it keeps. That is why it is not backendkit.MarshalRecord's
// record, which always carries the term.
type wireRecord struct {
	Format      int               `json:"fxelection"`
	Holder      string            `json:"holder"`
	Incarnation string            `json:"incarnation,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	DurationMS  int64             `json:"duration_ms"`
	Term        *uint64           `json:"term,omitempty"`
}

// encodeRecord returns the value written for l: its holder, incarnation,
// metadata and duration, and its term unless l.Term is 0, which means the
// term is the revision of the write that stores the value. The duration is
// stored in whole milliseconds, rounded up, so a positive duration never
// becomes zero.
func encodeRecord(l fxelection.Lease) (string, error) {
	d := l.Duration
	ms := d.Milliseconds()
	if d%time.Millisecond > 0 {
		ms++
	}
	w := wireRecord{Format: recordFormat, Holder: l.Holder, Incarnation: l.Incarnation, Metadata: l.Metadata, DurationMS: ms}
	if l.Term != 0 {
		term := l.Term
		w.Term = &term
	}
	b, err := json.Marshal(w)
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
// field: the value must be this package's JSON record (valid UTF-8,
// recordFormat, no unknown fields or trailing data), the create revision in [1, backendkit.MaxTerm], the mod
// revision not below it, a stated term in [create revision, mod revision)
// (it names an earlier write to the same key), the key attached to an etcd
// lease (a key without one would never expire), and the lease as a whole
// accepted by Lease.Validate. The term is the stated one, else the mod
// revision. Anything else
// gives an error matching backendkit.ErrInvalidRecord that quotes no stored
// value; it never panics.
func decodeRecord(election string, k storedKey) (fxelection.Lease, error) {
	bad := func(format string, args ...any) (fxelection.Lease, error) {
		return fxelection.Lease{}, fmt.Errorf("%w: %s", backendkit.ErrInvalidRecord, fmt.Sprintf(format, args...))
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
	term := uint64(k.ModRevision)
	if w.Term != nil {
		if *w.Term < uint64(k.CreateRevision) || *w.Term >= uint64(k.ModRevision) {
			return bad("stated term %d outside [create revision %d, mod revision %d)", *w.Term, k.CreateRevision, k.ModRevision)
		}
		term = *w.Term
	}
	d, err := backendkit.DurationFromMillis(w.DurationMS)
	if err != nil {
		return fxelection.Lease{}, err
	}
	l := fxelection.Lease{
		Election:    election,
		Holder:      w.Holder,
		Incarnation: w.Incarnation,
		Metadata:    maps.Clone(w.Metadata),
		Term:        term,
		Version:     formatLeaseID(k.Lease),
		Duration:    d,
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
