package bloblease

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// WorstCaseMetadata returns, by name, the metadata that Config accepts and
// whose lease record is the longest: its texts all HTML-special, multibyte
// or JSON-escaped, or thousands of tiny entries, or as many entry shapes
// as fit.
func worstCaseMetadata() map[string]map[string]string {
	n := backendkit.MaxMetadataBytes - 1 // the key "k"
	cases := map[string]map[string]string{
		"all <":      {"k": strings.Repeat("<", n)},
		"all &":      {"k": strings.Repeat("&", n)},
		"all \"":     {"k": strings.Repeat(`"`, n)},
		"all \\":     {"k": strings.Repeat(`\`, n)},
		"\" and \\":  {"k": strings.Repeat(`"\`, n/2) + `"`},
		"2-byte":     {"k": strings.Repeat("é", n/2) + "a"},
		"3-byte":     {"k": strings.Repeat("€", n/3)},
		"4-byte":     {"k": strings.Repeat("😀", n/4) + "abc"},
		"tiny":       tinyEntries(),
		"all shapes": allShapes(),
	}
	for name, md := range cases {
		size := 0
		for k, v := range md {
			size += len(k) + len(v)
		}
		if size > backendkit.MaxMetadataBytes || size < backendkit.MaxMetadataBytes-4 {
			panic(fmt.Sprintf("%s: %d bytes", name, size))
		}
	}
	return cases
}

// key returns the i-th key of length n (ASCII '!'..'~', so that JSON
// escapes some of them).
func key(i, n int) string {
	b := make([]byte, n)
	for j := n - 1; j >= 0; j-- {
		b[j] = byte('!' + i%94)
		i /= 94
	}
	return string(b)
}

// tinyEntries is as many entries as fit: every 1-byte key, then 2-byte
// keys, all with empty values.
func tinyEntries() map[string]string {
	md := map[string]string{}
	size := 0
	for i := 0; i < 94; i++ {
		md[key(i, 1)] = ""
		size++
	}
	for i := 0; size+2 <= backendkit.MaxMetadataBytes; i++ {
		md[key(i, 2)] = ""
		size += 2
	}
	return md
}

// allShapes is one entry of every (key length, value length) shape, the
// smallest first, as many as fit: each is a group of its own in the compact
// record.
func allShapes() map[string]string {
	md := map[string]string{}
	size := 0
	for s := 1; ; s++ {
		for kl := 1; kl <= s; kl++ {
			if size+s > backendkit.MaxMetadataBytes {
				return md
			}
			md[key(s, kl)] = strings.Repeat(`"`, s-kl)
			size += s
		}
	}
}

// worstLease is a lease whose other fields are as long as they may be.
func worstLease(md map[string]string) fxelection.Lease {
	return fxelection.Lease{
		Election:    strings.Repeat(`"`, backendkit.MaxNameLen),
		Holder:      strings.Repeat(`\`, backendkit.MaxIdentityLen),
		Incarnation: strings.Repeat("i", backendkit.MaxIncarnationLen),
		Metadata:    md,
		Term:        backendkit.MaxTerm,
		Duration:    backendkit.MaxRecordDuration,
		AcquiredAt:  time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
}

// TestMetaWorstCaseFits: the record of every lease whose texts Config
// accepts fits Azure's 8 KiB of blob metadata, and reads back the same.
func TestMetaWorstCaseFits(t *testing.T) {
	for name, md := range worstCaseMetadata() {
		l := worstLease(md)
		if err := l.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := encodeMeta(l)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		rec, _ := backendkit.MarshalRecord(l)
		t.Logf("%s: %d bytes of metadata value (JSON record %d bytes, %d in base64)", name, len(v), len(rec), base64.StdEncoding.EncodedLen(len(rec)))
		if len(v) > maxMetaValue {
			t.Errorf("%s: %d bytes, more than %d", name, len(v), maxMetaValue)
		}
		state, got, err := decodeMeta(map[string]*string{"Fxelection": &v}, l.Election)
		if state != recordValid || err != nil || !electiontesting.SameRecord(got, l) || got.Incarnation != l.Incarnation {
			t.Errorf("%s: read back %v, %v", name, state, err)
		}
	}
}

// TestMetaJSONWhenItFits: a record that fits as JSON is written as JSON,
// which every version of this package reads (a rolling upgrade), and both
// kinds read back.
func TestMetaJSONWhenItFits(t *testing.T) {
	for name, c := range map[string]struct {
		md   map[string]string
		json bool
	}{
		"small":  {map[string]string{"addr": "10.0.0.1:80"}, true},
		"all <":  {map[string]string{"k": strings.Repeat("<", backendkit.MaxMetadataBytes-1)}, true},
		"all \"": {map[string]string{"k": strings.Repeat(`"`, backendkit.MaxMetadataBytes-1)}, false},
		"tiny":   {tinyEntries(), false},
	} {
		l := fxelection.Lease{Election: "e", Holder: "h", Incarnation: "inc-1", Metadata: c.md, Term: 3, Duration: 15 * time.Second}
		v, err := encodeMeta(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := base64.StdEncoding.DecodeString(v)
		if json := raw[0] == '{'; json != c.json {
			t.Errorf("%s: written as JSON: %v, want %v", name, json, c.json)
		}
		if c.json {
			if _, err := backendkit.UnmarshalRecord(raw); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if state, got, err := decodeMeta(map[string]*string{"fxelection": &v}, "e"); state != recordValid || err != nil || !electiontesting.SameRecord(got, l) {
			t.Errorf("%s: read back %v, %v", name, state, err)
		}
	}
}

// TestDecodeCompactRejects: every truncation of a compact record, trailing
// bytes, repeated keys and impossible fields are invalid records, never a
// panic.
func TestDecodeCompactRejects(t *testing.T) {
	l := fxelection.Lease{Election: "e", Holder: "h", Metadata: map[string]string{"a": "1", "b": "2", "cc": ""}, Term: 3, Duration: 15 * time.Second, AcquiredAt: time.Unix(1e9, 5)}
	full := encodeCompact(l)
	if got, err := decodeCompact(full); err != nil || !electiontesting.SameRecord(got, l) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	l.Metadata = nil
	good := encodeCompact(l)
	if _, err := decodeCompact(good); err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"trailing":   append(append([]byte{}, good...), 1),
		"duplicate":  groups(good, 1, 1, 2, 'a', '1', 'a', '2'),
		"zero key":   groups(good, 1, 0, 1, 1, 'x'),
		"zero count": groups(good, 1, 1, 1, 0),
		"count":      groups(good, 1, 1, 0, 200, 'x'),
		"groups":     groups(good, 3, 1, 1, 1, 'x', '1'),
		"not":        []byte(`{"fxelection":1}`),
	}
	for i := range len(full) {
		bad[fmt.Sprint("cut at ", i)] = full[:i]
	}
	bad["time flag"] = encodeCompact(fxelection.Lease{Election: "e", Holder: "h", Term: 1, Duration: time.Second})
	bad["time flag"][len(bad["time flag"])-1] = 2
	bad["zero term"] = encodeCompact(fxelection.Lease{Election: "e", Holder: "h", Term: 0, Duration: time.Second})
	bad["control"] = encodeCompact(fxelection.Lease{Election: "e", Holder: "h\x1b", Term: 1, Duration: time.Second})
	for name, b := range bad {
		if _, err := decodeCompact(b); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", name, err)
		}
	}
}

// groups replaces the metadata of the compact record b (which has none) by
// the bytes g (a group count, then groups).
func groups(b []byte, g ...byte) []byte {
	if b[len(b)-1] != 0 {
		panic("the record has metadata")
	}
	return append(append([]byte{}, b[:len(b)-1]...), g...)
}

// WorstCaseMetadata is worstCaseMetadata for the tests on Azurite.
var WorstCaseMetadata = worstCaseMetadata
