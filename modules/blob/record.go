package bloblease

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// maxMetaValue is the longest metadata value this package writes: Azure
// limits all of a blob's metadata, names and values together, to 8 KiB,
// and MetadataKey is the only name.
const maxMetaValue = 8<<10 - len(MetadataKey)

// compactFormat is the first byte of a compact record. A JSON record
// starts with '{'.
const compactFormat = 2

// The compact record is what encodeMeta writes when the JSON record, in
// base64, would not fit in maxMetaValue (JSON doubles '"' and '\', and adds
// six bytes to every metadata entry). Its bytes, in order:
//
//	compactFormat
//	uvarint length, election; uvarint length, holder; uvarint length, incarnation
//	uvarint term; uvarint duration in milliseconds (rounded up)
//	0, or 1 then varint Unix seconds and uvarint nanoseconds of the acquisition
//	uvarint number of metadata groups, then each group: uvarint key length
//	(≥ 1), uvarint value length, uvarint count (≥ 1), then count keys and
//	values of those lengths; nothing after the last group
//
// The entries are grouped by the lengths of their key and value, so a map of
// thousands of tiny entries costs a few bytes per distinct shape, not per
// entry. Every map of at most backendkit.MaxMetadataBytes has fewer than 300
// shapes (their sizes add up to at most 4,096), so the record is at most
// 4,096 + ~1,200 bytes of metadata + ~500 of the other fields, and its
// base64 fits maxMetaValue (TestMetaWorstCaseFits).

// encodeCompact is the compact record of l.
func encodeCompact(l fxelection.Lease) []byte {
	b := []byte{compactFormat}
	for _, s := range []string{l.Election, l.Holder, l.Incarnation} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	ms := l.Duration.Milliseconds()
	if l.Duration%time.Millisecond > 0 {
		ms++
	}
	b = binary.AppendUvarint(b, l.Term)
	b = binary.AppendUvarint(b, uint64(max(ms, 0)))
	if l.AcquiredAt.IsZero() {
		b = append(b, 0)
	} else {
		at := l.AcquiredAt.UTC()
		b = append(b, 1)
		b = binary.AppendVarint(b, at.Unix())
		b = binary.AppendUvarint(b, uint64(at.Nanosecond()))
	}
	keys := slices.SortedFunc(maps.Keys(l.Metadata), func(x, y string) int {
		return cmp.Or(cmp.Compare(len(x), len(y)), cmp.Compare(len(l.Metadata[x]), len(l.Metadata[y])), cmp.Compare(x, y))
	})
	var groups []byte
	ngroups := 0
	for i := 0; i < len(keys); ngroups++ {
		kl, vl := len(keys[i]), len(l.Metadata[keys[i]])
		j := i + 1
		for j < len(keys) && len(keys[j]) == kl && len(l.Metadata[keys[j]]) == vl {
			j++
		}
		groups = binary.AppendUvarint(groups, uint64(kl))
		groups = binary.AppendUvarint(groups, uint64(vl))
		groups = binary.AppendUvarint(groups, uint64(j-i))
		for _, k := range keys[i:j] {
			groups = append(groups, k...)
			groups = append(groups, l.Metadata[k]...)
		}
		i = j
	}
	b = binary.AppendUvarint(b, uint64(ngroups))
	return append(b, groups...)
}

// errCompact is what every malformed compact record gives; the caller
// wraps it with backendkit.ErrInvalidRecord.
var errCompact = errors.New("malformed compact record")

// Acquisition times outside these seconds would not be in years 1–9999,
// and time.Unix would wrap them into those years.
var (
	minUnix = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxUnix = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// decodeCompact decodes a record written by encodeCompact and validates it
// with Lease.Validate. Anything else gives an error matching
// backendkit.ErrInvalidRecord that quotes nothing of b.
func decodeCompact(b []byte) (fxelection.Lease, error) {
	l, err := parseCompact(b)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%w: %w", backendkit.ErrInvalidRecord, err)
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	return l, nil
}

func parseCompact(b []byte) (fxelection.Lease, error) {
	if len(b) == 0 || b[0] != compactFormat {
		return fxelection.Lease{}, errCompact
	}
	b = b[1:]
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	bytesOf := func(n uint64) (string, bool) {
		if n > uint64(len(b)) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	var texts [3]string
	for i := range texts {
		n, ok := uvarint()
		if !ok {
			return fxelection.Lease{}, errCompact
		}
		if texts[i], ok = bytesOf(n); !ok {
			return fxelection.Lease{}, errCompact
		}
	}
	term, ok1 := uvarint()
	ms, ok2 := uvarint()
	if !ok1 || !ok2 || len(b) == 0 || ms > 1<<63-1 {
		return fxelection.Lease{}, errCompact
	}
	d, err := backendkit.DurationFromMillis(int64(ms))
	if err != nil {
		return fxelection.Lease{}, errCompact
	}
	l := fxelection.Lease{Election: texts[0], Holder: texts[1], Incarnation: texts[2], Term: term, Duration: d}
	hasTime := b[0]
	b = b[1:]
	switch hasTime {
	case 0:
	case 1:
		sec, n := binary.Varint(b)
		if n <= 0 || sec < minUnix || sec > maxUnix {
			return fxelection.Lease{}, errCompact
		}
		b = b[n:]
		nsec, ok := uvarint()
		if !ok || nsec >= 1e9 {
			return fxelection.Lease{}, errCompact
		}
		l.AcquiredAt = time.Unix(sec, int64(nsec)).UTC()
	default:
		return fxelection.Lease{}, errCompact
	}
	ngroups, ok := uvarint()
	if !ok || ngroups > uint64(len(b)) {
		return fxelection.Lease{}, errCompact
	}
	for range ngroups {
		kl, ok1 := uvarint()
		vl, ok2 := uvarint()
		count, ok3 := uvarint()
		// kl and vl are at most len(b) here, so their sum cannot overflow.
		if !ok1 || !ok2 || !ok3 || kl == 0 || count == 0 || kl > uint64(len(b)) || vl > uint64(len(b)) ||
			count > uint64(len(b))/(kl+vl) {
			return fxelection.Lease{}, errCompact
		}
		if l.Metadata == nil {
			l.Metadata = map[string]string{}
		}
		for range count {
			k, _ := bytesOf(kl)
			v, _ := bytesOf(vl)
			if _, dup := l.Metadata[k]; dup {
				return fxelection.Lease{}, errCompact
			}
			l.Metadata[k] = v
		}
	}
	if len(b) > 0 {
		return fxelection.Lease{}, errCompact
	}
	return l, nil
}
