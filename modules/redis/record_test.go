package redislease

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
)

// hostileRecords are lease values that must decode to ErrInvalidRecord.
// The first is the reproduction from issue 9: a holder that is not UTF-8.
var hostileRecords = []struct{ name, v string }{
	{"HolderNotUTF8", "fxe2|5|3|\xff\xfe\xfd|0123456789abcdef|60000|0|"},
	{"HolderControl", "fxe2|5|3|a\nb|0123456789abcdef|60000|0|"},
	{"HolderNUL", "fxe2|5|3|a\x00b|0123456789abcdef|60000|0|"},
	{"HolderTerminalEscape", "fxe2|5|7|\x1b[2Jevil|0123456789abcdef|60000|0|"},
	{"HolderC1Control", "fxe2|5|3|a\u0085|0123456789abcdef|60000|0|"},
	{"HolderTooLong", "fxe2|5|5000|" + strings.Repeat("h", 5000) + "|0123456789abcdef|60000|0|"},
	{"DurationOverflow", "fxe2|5|1|a|0123456789abcdef|9223372036854775807|0|"},
	{"DurationOverflowMillis", "fxe2|5|1|a|0123456789abcdef|9223372036855|0|"},
	{"DurationTooLong", "fxe2|5|1|a|0123456789abcdef|" + strconv.FormatInt((backendkit.MaxRecordDuration+time.Millisecond).Milliseconds(), 10) + "|0|"},
	{"DurationZero", "fxe2|5|1|a|0123456789abcdef|0|0|"},
	{"DurationNegative", "fxe2|5|1|a|0123456789abcdef|-1|0|"},
	{"DurationLeadingZero", "fxe2|5|1|a|0123456789abcdef|060000|0|"},
	{"TermZero", "fxe2|0|1|a|0123456789abcdef|60000|0|"},
	{"TermAboveMax", "fxe2|9223372036854775808|1|a|0123456789abcdef|60000|0|"},
	{"TermMaxUint64", "fxe2|18446744073709551615|1|a|0123456789abcdef|60000|0|"},
	{"TermHuge", "fxe2|123456789012345678901234567890|1|a|0123456789abcdef|60000|0|"},
	{"TermLeadingZero", "fxe2|05|1|a|0123456789abcdef|60000|0|"},
	{"TermSigned", "fxe2|+5|1|a|0123456789abcdef|60000|0|"},
	{"LengthSigned", "fxe2|5|+1|a|0123456789abcdef|60000|0|"},
	{"AcquiredAtSigned", "fxe2|5|1|a|0123456789abcdef|60000|+0|"},
	{"MetadataControl", "fxe2|5|1|a|0123456789abcdef|60000|0|{\"k\":\"\\u001b[31mred\"}"},
	{"MetadataNotUTF8", "fxe2|5|1|a|0123456789abcdef|60000|0|{\"k\":\"\xff\"}"},
	{"MetadataKeyControl", "fxe2|5|1|a|0123456789abcdef|60000|0|{\"\\n\":\"v\"}"},
	{"MetadataEmptyKey", "fxe2|5|1|a|0123456789abcdef|60000|0|{\"\":\"v\"}"},
	{"MetadataNull", "fxe2|5|1|a|0123456789abcdef|60000|0|null"},
	{"MetadataNumber", "fxe2|5|1|a|0123456789abcdef|60000|0|{\"k\":1}"},
	{"FormatUnknown", "fxe1|5|1|a|60000|0|"},
	{"NonceMissing", "fxe2|5|1|a|60000|0|"},
	{"NonceEmpty", "fxe2|5|1|a||60000|0|"},
	{"NonceShort", "fxe2|5|1|a|0123456789abcde|60000|0|"},
	{"NonceLong", "fxe2|5|1|a|0123456789abcdef0|60000|0|"},
	{"NonceUpperCase", "fxe2|5|1|a|0123456789ABCDEF|60000|0|"},
	{"NonceNotHex", "fxe2|5|1|a|0123456789abcdeg|60000|0|"},
	{"NonceControl", "fxe2|5|1|a|0123456789abcde\x1b|60000|0|"},
	{"MetadataTooLarge", "fxe2|5|1|a|0123456789abcdef|60000|0|{\"k\":\"" + strings.Repeat("v", backendkit.MaxMetadataBytes) + "\"}"},
}

// TestParseRecordHostile: every hostile value gives ErrInvalidRecord from
// the parser, and the error quotes none of the stored text.
func TestParseRecordHostile(t *testing.T) {
	for _, tc := range hostileRecords {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parseRecord("e", tc.v)
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("parseRecord(%q) = %+v, %v; want ErrInvalidRecord", tc.v, l, err)
			}
			for _, bad := range []string{"\xff", "\x1b", "\n", "\x00", "\u0085"} {
				if strings.Contains(err.Error(), bad) {
					t.Fatalf("error %q quotes stored control text", err)
				}
			}
		})
	}
}

// TestHostileRecordsInRedis plants each hostile value (with a minute to
// live) under a real lease key: Acquire and Get give ErrInvalidRecord,
// nothing panics, and the value is not taken over before it expires, by
// another identity or by the elector that it names.
func TestHostileRecordsInRedis(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	b := newBackend(t, srv.Addr(), Options{})
	for _, tc := range hostileRecords {
		t.Run(tc.name, func(t *testing.T) {
			e := electionName(t)
			lease, _ := b.Keys(e)
			if err := admin.Set(ctxT(t), lease, tc.v, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			// A record naming a with a valid term and nonce is a's own.
			own := strings.HasPrefix(tc.v, "fxe2|5|1|a|0123456789abcdef|")
			for _, id := range []string{"b", "a"} {
				l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute})
				if id == "a" && err == nil && own {
					// The record names a with a valid term: it is a's own
					// lease (a damaged one), which a may refresh. Only the
					// duration and metadata can be bad then, and they are
					// rewritten.
					if cerr := l.Validate(); cerr != nil {
						t.Fatalf("refreshed lease is invalid: %v", cerr)
					}
					continue
				}
				if !errors.Is(err, backendkit.ErrInvalidRecord) {
					t.Fatalf("Acquire as %s: %+v, %v; want ErrInvalidRecord", id, l, err)
				}
			}
			if _, err := b.Get(ctxT(t), e); err != nil && !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("Get: %v", err)
			}
			if got := admin.Get(ctxT(t), lease).Val(); !own && got != tc.v {
				t.Fatalf("the hostile value was replaced by %q", got)
			}
		})
	}
	// The exact reproduction from the issue, through an elector: it never
	// leads while the value lives, and reports invalid records.
	e := electionName(t)
	lease, _ := b.Keys(e)
	if err := admin.Set(ctxT(t), lease, "fxe2|5|3|\xff\xfe\xfd|0123456789abcdef|60000|0|", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c := electiontesting.StartCandidate(t, b, e, "a", nil)
	c.Events.WaitFor(t, electiontesting.Eventually, "an invalid-record error", func(ev fxelection.Event) bool {
		return ev.Err != nil && errors.Is(ev.Err, backendkit.ErrInvalidRecord)
	})
	if c.Elector.IsLeader() {
		t.Fatal("took over a live lease with an invalid holder")
	}
	if l, ok := c.Elector.Leader(); ok || strings.Contains(l.Holder, "\xff") {
		t.Fatalf("the elector reports the invalid holder as leader: %+v", l)
	}
	if v := admin.Get(ctxT(t), lease).Val(); v != "fxe2|5|3|\xff\xfe\xfd|0123456789abcdef|60000|0|" {
		t.Fatalf("the value was replaced by %q", v)
	}
}

// TestOwnDamagedRecord: a record that names the caller's identity, a
// valid term and a well-formed nonce is the caller's own, and Acquire refreshes it (a duration out of range and bad
// metadata are rewritten, with a new nonce); one whose term, acquisition
// time or nonce is malformed is refused and left as it is.
func TestOwnDamagedRecord(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	b := newBackend(t, srv.Addr(), Options{})
	for _, v := range []string{
		"fxe2|3|1|b|0123456789abcdef|60000|99999999999999999999999|",
		"fxe2|99999999999999999999999|1|b|0123456789abcdef|60000|0|",
		"fxe2|0|1|b|0123456789abcdef|60000|0|",
		"fxe2|03|1|b|0123456789abcdef|60000|0|",
		"fxe2|3|1|b|nonce|60000|0|",
		"fxe2|3|1|b|0123456789ABCDEF|60000|0|",
		"fxe2|3|1|b|0123456789abcdef0|60000|0|",
		"fxe2|3|1|b|60000|0|",
		"fxe2|3|1|b|0123456789abcdef|60000|0042|",
	} {
		e := electionName(t)
		lease, _ := b.Keys(e)
		if err := admin.Set(ctxT(t), lease, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: 2 * time.Minute})
		if !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Fatalf("Acquire over %q: %v, want ErrInvalidRecord", v, err)
		}
		if got := admin.Get(ctxT(t), lease).Val(); got != v {
			t.Fatalf("%q was rewritten to %q", v, got)
		}
	}
	for _, v := range []string{
		"fxe2|3|1|b|0123456789abcdef|99999999999999|0|{\"k\":1}",
	} {
		e := electionName(t)
		lease, _ := b.Keys(e)
		if err := admin.Set(ctxT(t), lease, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: 2 * time.Minute})
		if err != nil || l.Term != 3 || !validNonce(l.Version) || l.Version == "0123456789abcdef" {
			t.Fatalf("Acquire over its own damaged record %q = %+v, %v; want term 3 and a new nonce", v, l, err)
		}
		if got, err := b.Get(ctxT(t), e); err != nil || got.Term != 3 || got.Duration != 2*time.Minute || got.Version != l.Version {
			t.Fatalf("Get after the refresh = %+v, %v", got, err)
		}
	}
}

// recordText encodes l as the scripts write it, its Version as the nonce.
func recordText(t testing.TB, l fxelection.Lease) string {
	t.Helper()
	meta, err := encodeMetadata(l.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(0)
	if !l.AcquiredAt.IsZero() {
		at = l.AcquiredAt.UnixMilli()
	}
	return recordFormat + termPart(l) + l.Version + "|" + strconv.FormatInt(l.Duration.Milliseconds(), 10) + "|" + strconv.FormatInt(at, 10) + "|" + meta
}

// FuzzParseRecord: the record parser never panics; what it accepts is a
// valid lease (Lease.Validate; in the fxe2 format, with a well-formed nonce as
// its Version) whose re-encoding has the same text up to the metadata and
// decodes to an equal lease. Seeded with the hostile values, well-formed
// records, and fxe1 values (a format no reader accepts: foreign values).
func FuzzParseRecord(f *testing.F) {
	for _, tc := range hostileRecords {
		f.Add(tc.v)
	}
	for _, v := range []string{
		"fxe1|42|5|a|b|c|1500|1700000000000|{\"k\":\"v\"}",
		"fxe1|1764512345678901|5|web-1|15000|1764512345678|{\"addr\":\"10.0.0.1:8080\"}",
		"fxe1|9223372036854775807|1|a|60000|0|",
		"fxe1|1|1|a|31536000000|0|{}",
		"fxe1|7|8|ünï|60000|0|{\"k\":\"ü ✓\"}",
		"fxe2|42|5|a|b|c|0123456789abcdef|1500|1700000000000|{\"k\":\"v\"}",
		"fxe2|1764512345678901|5|web-1|9f86d081884c7d65|15000|1764512345678|{\"addr\":\"10.0.0.1:8080\"}",
		"fxe2|9223372036854775807|1|a|ffffffffffffffff|60000|0|",
		"fxe2|1|1|a|0123456789abcdef|31536000000|0|{}",
		"fxe2|7|8|ünï|0000000000000000|60000|0|{\"k\":\"ü ✓\"}",
		"", "fxe1", "fxe1|||||", "fxe2||||||", "\x00not a lease record",
	} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		l, err := parseRecord("e", v)
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("parseRecord(%q): %v does not match ErrInvalidRecord", v, err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("parseRecord(%q) accepted an invalid lease: %v", v, err)
		}
		if !strings.HasPrefix(v, recordFormat+"|") || !validNonce(l.Version) {
			t.Fatalf("parseRecord(%q) gave Version %q", v, l.Version)
		}
		again := recordText(t, l)
		head := v[:len(v)-len(metadataPart(v))]
		if !strings.HasPrefix(again, head) {
			t.Fatalf("re-encoded %q, want it to start with %q", again, head)
		}
		l2, err := parseRecord("e", again)
		if err != nil {
			t.Fatalf("re-encoding %q of %q does not decode: %v", again, v, err)
		}
		if l2.Holder != l.Holder || l2.Term != l.Term || l2.Version != l.Version || l2.Duration != l.Duration ||
			!l2.AcquiredAt.Equal(l.AcquiredAt) || !maps.Equal(l2.Metadata, l.Metadata) {
			t.Fatalf("%q decodes to %+v, its re-encoding %q to %+v", v, l, again, l2)
		}
	})
}

// metadataPart returns what follows the acquisition time of a record
// parseRecord accepted.
func metadataPart(v string) string {
	parts := strings.SplitN(v, "|", 4) // format, term, length, rest
	n, _ := strconv.Atoi(parts[2])
	rest := parts[3][n+1:]
	for range 3 { // nonce, duration, acquired
		_, rest, _ = strings.Cut(rest, "|")
	}
	return rest
}
