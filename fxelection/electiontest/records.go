package electiontest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// Helpers for testing a backend's record decoder against what anyone with
// write access to the store may have written there.

// RawRecord returns a record in the core's JSON format (version 1, as
// backendkit.MarshalRecord writes it) with holder, term and durationMS
// written as they are, unchecked and unescaped, acquired at
// 2026-01-01T00:00:00Z: for planting hostile records in a store.
func RawRecord(election, holder, term, durationMS string) string {
	return `{"fxelection":1,"election":"` + election + `","holder":"` + holder + `","term":` + term +
		`,"duration_ms":` + durationMS + `,"acquired_at":"2026-01-01T00:00:00Z"}`
}

// HostileRecords returns records in the core's JSON format for election
// that a decoder must reject, or accept only as a valid lease: holders
// that are invalid UTF-8 or hold NUL, escape sequences, a bidi override or
// a lone surrogate; terms of 0, in exponent form and at and beyond the
// int64 and uint64 limits; durations that overflow, are negative or zero;
// another election's record; empty or control-character metadata;
// another format version; timestamps out of range; JSON that is not an
// object. For fuzz seed corpora and hostile-record tests.
func HostileRecords(election string) []string {
	rec := func(rest string) string {
		return `{"fxelection":1,"election":"` + election + `","holder":"x",` + rest + `}`
	}
	return []string{
		RawRecord(election, "\xff\xfe\xfd", "5", "60000"),
		RawRecord(election, `a\u0000b`, "5", "60000"),
		RawRecord(election, `\u001b[2J`, "5", "60000"),
		RawRecord(election, `a\u202eb`, "5", "60000"),
		RawRecord(election, `\ud800`, "5", "60000"),
		RawRecord(election, "x", "0", "60000"),
		RawRecord(election, "x", "1e3", "60000"),
		RawRecord(election, "x", "9223372036854775807", "60000"),
		RawRecord(election, "x", "9223372036854775808", "60000"),
		RawRecord(election, "x", "18446744073709551615", "60000"),
		RawRecord(election, "x", "18446744073709551616", "60000"),
		RawRecord(election, "x", "5", fmt.Sprint(int64(math.MaxInt64))),
		RawRecord(election, "x", "5", fmt.Sprint(int64(math.MaxInt64/1000+1))),
		RawRecord(election, "x", "5", "-1"),
		RawRecord(election, "x", "5", "0"),
		`{"fxelection":1,"election":"other` + election + `","holder":"x","term":5,"duration_ms":1000}`,
		rec(`"metadata":{"":"v"},"term":5,"duration_ms":1000`),
		rec(`"metadata":{"k":"\u0007"},"term":5,"duration_ms":1000`),
		rec(`"metadata":{},"term":5,"duration_ms":1000,"acquired_at":"2026-01-01T05:00:00+05:00"`),
		`{"fxelection":2,"election":"` + election + `","holder":"x","term":5,"duration_ms":1000}`,
		rec(`"term":5,"duration_ms":1000,"acquired_at":"0000-01-01T00:00:00+01:00"`),
		rec(`"term":5,"duration_ms":1000,"acquired_at":"9999-12-31T23:59:59-01:00"`),
		`null`,
		`"string"`,
	}
}

// CheckDecoded checks what a backend's decoder made of a record for
// election that anyone may have written: a rejection (err != nil) must
// match backendkit.ErrInvalidRecord, in printable UTF-8 text; an accepted
// lease must pass Lease.Validate and name election, with a term in
// 1..MaxTerm, a positive duration and printable UTF-8 in its holder and
// metadata. It reports whether the lease was accepted, so that the caller
// goes on to check that it re-encodes to the same lease: the same
// election, holder, term, duration, acquisition time and metadata.
func CheckDecoded(t testing.TB, election string, l fxelection.Lease, err error) (accepted bool) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Fatalf("rejected with %v, want ErrInvalidRecord", err)
		}
		if !printable(err.Error()) {
			t.Fatalf("error text is not printable UTF-8: %q", err)
		}
		return false
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("accepted a lease Validate rejects: %v", err)
	}
	if l.Election != election || l.Term == 0 || l.Term > backendkit.MaxTerm || l.Duration <= 0 {
		t.Fatalf("accepted %+v", l)
	}
	texts := []string{l.Holder}
	for k, v := range l.Metadata {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if !printable(s) {
			t.Fatalf("accepted text %q", s)
		}
	}
	return true
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// CheckRecordRefused checks that b refuses the hostile record stored for
// r.Election: Acquire (with r) and Get fail with ErrInvalidRecord, and the
// error text holds none of the stored control or invalid bytes (ESC, BEL,
// 0xff) unescaped.
func CheckRecordRefused(t testing.TB, b fxelection.Backend, r backendkit.AcquireRequest) {
	t.Helper()
	_, err := b.Acquire(electiontesting.Context(t), r)
	if !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Acquire: %v, want ErrInvalidRecord", err)
	}
	// ContainsRune(…, utf8.RuneError) finds any invalid UTF-8 (0xff).
	if msg := err.Error(); strings.ContainsAny(msg, "\x1b\x07") || strings.ContainsRune(msg, utf8.RuneError) {
		t.Fatalf("error carries stored bytes unescaped: %q", err)
	}
	if l, err := b.Get(electiontesting.Context(t), r.Election); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Get: %+v, %v, want ErrInvalidRecord", l, err)
	}
}
