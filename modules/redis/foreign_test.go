package redislease

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestForeignValues plants values the backend did not write under an
// election's keys: every operation gives an error matching ErrInvalidRecord
// (Renew: ErrLeaseLost, with ErrInvalidRecord for another type), nothing
// panics, Release leaves the value, and
// nothing is taken over.
func TestForeignValues(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	b := newBackend(t, srv.Addr(), Options{})

	const (
		lost        = "lost"         // Renew: ErrLeaseLost
		lostInvalid = "lost+invalid" // Renew: ErrLeaseLost and ErrInvalidRecord
		counter     = "counter"      // the foreign value is the term counter
	)
	str := func(v string) func(t *testing.T, lease, _ string) {
		return func(t *testing.T, lease, _ string) { admin.Set(ctxT(t), lease, v, time.Minute) }
	}
	cases := []struct {
		name  string
		plant func(t *testing.T, lease, term string)
		renew string
	}{
		{"String", str("\x00garbage"), lost},
		{"List", func(t *testing.T, lease, _ string) { admin.RPush(ctxT(t), lease, "x") }, lostInvalid},
		{"Set", func(t *testing.T, lease, _ string) { admin.SAdd(ctxT(t), lease, "x") }, lostInvalid},
		{"Hash", func(t *testing.T, lease, _ string) { admin.HSet(ctxT(t), lease, "holder", "a", "term", "3") }, lostInvalid},
		{"OtherFormat", str("fxe3|3|1|a|0123456789abcdef|60000|0|"), lost},
		{"NoNonce", str("fxe2|3|1|a|60000|0|"), lostInvalid},
		{"ShortNonce", str("fxe2|3|1|z|0123|60000|0|"), lost},
		{"UpperCaseNonce", str("fxe2|3|1|z|0123456789ABCDEF|60000|0|"), lost},
		{"BadTerm", str("fxe2|x3|1|a|0123456789abcdef|60000|0|"), lost},
		{"ZeroTerm", str("fxe2|0|1|z|0123456789abcdef|60000|0|"), lost},
		{"BadHolderLength", str("fxe2|3|5|a|0123456789abcdef|60000|0|"), lost},
		{"Truncated", str("fxe2|3|1|z|0123456789abcdef|60000"), lost},
		{"BadMetadata", str(`fxe2|3|1|z|0123456789abcdef|60000|0|{"a":`), lost},
		{"BadAcquiredAt", str("fxe2|3|1|z|0123456789abcdef|60000|-5|"), lost},
		// A record in a format this package does not write (no nonce),
		// with our holder and term: not ours.
		{"FormatWithoutNonce", str("fxe1|3|1|a|60000|0|"), lost},
		// Our holder and term, but a broken duration: Renew cannot extend
		// what it cannot rewrite.
		{"OursBadDuration", str("fxe2|3|1|a|0123456789abcdef|soon|0|"), lostInvalid},
		{"OursBadNonce", str("fxe2|3|1|a|nonce|60000|0|"), lostInvalid},
		{"CounterString", func(t *testing.T, _, term string) { admin.Set(ctxT(t), term, "not a number", 0) }, counter},
		{"CounterTooLarge", func(t *testing.T, _, term string) { admin.Set(ctxT(t), term, "9223372036854775808", 0) }, counter},
		{"CounterLeadingZero", func(t *testing.T, _, term string) { admin.Set(ctxT(t), term, "0042", 0) }, counter},
		{"CounterFloat", func(t *testing.T, _, term string) { admin.Set(ctxT(t), term, "1e3", 0) }, counter},
		{"CounterNegative", func(t *testing.T, _, term string) { admin.Set(ctxT(t), term, "-1", 0) }, counter},
		{"CounterList", func(t *testing.T, _, term string) { admin.RPush(ctxT(t), term, "x") }, counter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := electionName(t)
			lease, term := b.Keys(e)
			tc.plant(t, lease, term)
			_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute})
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("Acquire: %v, want ErrInvalidRecord", err)
			}
			t.Logf("Acquire: %v", err)
			if tc.renew == counter {
				if n, _ := admin.Exists(ctxT(t), lease).Result(); n != 0 {
					t.Fatal("Acquire wrote a lease although the counter is foreign")
				}
				return
			}
			if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("Get: %v, want ErrInvalidRecord", err)
			}
			forged := fxelection.Lease{Election: e, Holder: "a", Term: 3, Duration: time.Minute}
			_, err = b.Renew(ctxT(t), forged)
			if !errors.Is(err, backendkit.ErrLeaseLost) || errors.Is(err, backendkit.ErrInvalidRecord) != (tc.renew == lostInvalid) {
				t.Fatalf("Renew: %v, want %s", err, tc.renew)
			}
			if err := b.Release(ctxT(t), fxelection.Lease{Election: e, Holder: "b", Term: 3}); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if n, _ := admin.Exists(ctxT(t), lease).Result(); n != 1 {
				t.Fatal("Release removed a foreign value")
			}
			if ttl := admin.PTTL(ctxT(t), lease).Val(); ttl > time.Minute {
				t.Fatalf("foreign value's expiry changed: %v", ttl)
			}
		})
	}
}

// TestParseRecord checks the decoder on odd inputs: it never panics and
// round-trips what the scripts write.
func TestParseRecord(t *testing.T) {
	for _, tc := range []struct{ good, nonce string }{
		{"fxe2|42|5|a|b|c|0123456789abcdef|1500|1700000000000|{\"k\":\"v\"}", "0123456789abcdef"},
	} {
		good := tc.good
		l, err := parseRecord("e", good)
		if err != nil {
			t.Fatal(err)
		}
		if l.Holder != "a|b|c" || l.Term != 42 || l.Version != tc.nonce || l.Duration != 1500*time.Millisecond || l.AcquiredAt.UnixMilli() != 1700000000000 || l.Metadata["k"] != "v" {
			t.Fatalf("parsed %+v", l)
		}
		if got := termPart(l); got != "|42|5|a|b|c|" || got != "|42"+holderPart("a|b|c") {
			t.Fatalf("termPart = %q", got)
		}
		if got := recordText(t, l); got != good {
			t.Fatalf("recordText = %q, want %q", got, good)
		}
		noMeta := strings.TrimSuffix(good, `{"k":"v"}`)
		for i := range len(good) {
			if good[:i] == noMeta {
				continue // a record without metadata
			}
			if _, err := parseRecord("e", good[:i]); err == nil {
				t.Errorf("prefix %q parsed", good[:i])
			} else if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Errorf("prefix %q: %v", good[:i], err)
			}
		}
	}
	for _, v := range []string{"", "|", "fxe1", "fxe2", "fxe1|||||", "fxe2||||||", "fxe1|1|-1|a|1|1|", "fxe1|1|99999999999999999999|a|1|1|", "fxe1|18446744073709551616|1|a|1|1|",
		"fxe2|1|1|a|1|1|", "fxe2|1|1|a|0123456789abcdef0|1|1|", "fxe2|1|1|a|0123456789abcdeg|1|1|", "fxe2|1|1|a||1|1|"} {
		if _, err := parseRecord("e", v); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// TestRecordLayout checks what an acquired lease looks like in Redis, and
// that Get reads it back with server-clock times.
func TestRecordLayout(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	before := time.Now()
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Metadata: map[string]string{"addr": "10.0.0.1:80"}, Duration: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lease, term := b.Keys(e)
	v, err := admin.Get(ctxT(t), lease).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !validNonce(l.Version) {
		t.Fatalf("Acquire's Version %q is not a nonce", l.Version)
	}
	want := fmt.Sprintf(`fxe2|%d|1|a|%s|90000|%d|{"addr":"10.0.0.1:80"}`, l.Term, l.Version, l.AcquiredAt.UnixMilli())
	if v != want || admin.Get(ctxT(t), term).Val() != strconv.FormatUint(l.Term, 10) {
		t.Fatalf("record = %q, want %q", v, want)
	}
	if ttl := admin.PTTL(ctxT(t), lease).Val(); ttl <= 80*time.Second || ttl > 90*time.Second {
		t.Fatalf("PTTL = %v", ttl)
	}
	if ttl := admin.PTTL(ctxT(t), term).Val(); ttl >= 0 {
		t.Fatalf("term counter PTTL = %v, want none", ttl)
	}
	// Clock-based term: the server's clock in µs (same machine here).
	if lo, hi := before.Add(-time.Minute).UnixMicro(), time.Now().Add(time.Minute).UnixMicro(); int64(l.Term) < lo || int64(l.Term) > hi {
		t.Fatalf("term %d is not near the server clock in µs (%d…%d)", l.Term, lo, hi)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil {
		t.Fatal(err)
	}
	// Same machine: the server's clock is ours, within generous slack.
	if d := got.AcquiredAt.Sub(before); d < -time.Minute || d > time.Minute {
		t.Fatalf("AcquiredAt %v far from %v", got.AcquiredAt, before)
	}
	if d := got.ExpiresAt.Sub(got.AcquiredAt); d <= 80*time.Second || d > 91*time.Second {
		t.Fatalf("ExpiresAt − AcquiredAt = %v, want about 90s", d)
	}
	if got.Holder != "a" || got.Term != l.Term || got.Version != l.Version || got.Metadata["addr"] != "10.0.0.1:80" || got.Duration != 90*time.Second || !got.AcquiredAt.Equal(l.AcquiredAt) {
		t.Fatalf("Get = %+v, acquired %+v", got, l)
	}
	// A shorter duration on renewal is stored and applied.
	l.Duration = 30 * time.Second
	if _, err := b.Renew(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	if ttl := admin.PTTL(ctxT(t), lease).Val(); ttl > 30*time.Second {
		t.Fatalf("PTTL after renewal with 30s = %v", ttl)
	}
	if got, _ := b.Get(ctxT(t), e); got.Duration != 30*time.Second || got.Metadata["addr"] != "10.0.0.1:80" || !got.AcquiredAt.Equal(l.AcquiredAt) {
		t.Fatalf("after renewal with a new duration Get = %+v", got)
	}
	if v := admin.Get(ctxT(t), lease).Val(); v != strings.Replace(want, "|90000|", "|30000|", 1) {
		t.Fatalf("record after renewal with a new duration = %q", v)
	}
	// Re-acquiring updates the metadata and the nonce and keeps the term.
	l2, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Metadata: map[string]string{"addr": "new"}, Duration: time.Minute})
	if err != nil || l2.Term != l.Term || !l2.AcquiredAt.Equal(l.AcquiredAt) || !validNonce(l2.Version) || l2.Version == l.Version {
		t.Fatalf("re-acquire = %+v, %v", l2, err)
	}
	if v, want := admin.Get(ctxT(t), lease).Val(), fmt.Sprintf(`fxe2|%d|1|a|%s|60000|%d|{"addr":"new"}`, l.Term, l2.Version, l.AcquiredAt.UnixMilli()); v != want {
		t.Fatalf("record after re-acquire = %q, want %q", v, want)
	}
	if got, _ := b.Get(ctxT(t), e); got.Metadata["addr"] != "new" {
		t.Fatalf("metadata after re-acquire = %v", got.Metadata)
	}
	if _, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 0}); err == nil {
		t.Fatal("Acquire with zero duration succeeded")
	}
}

// TestMetadataEncoding: the hand-written fast path and encoding/json agree.
func TestMetadataEncoding(t *testing.T) {
	many := map[string]string{}
	for i := range 20 {
		many[fmt.Sprintf("k%02d", 20-i)] = fmt.Sprint(i)
	}
	for _, m := range []map[string]string{
		{"addr": "10.0.0.1:8080"},
		{"b": "2", "a": "1", "c": ""},
		many,
		{"quote": `say "hi"`},
		{"back\\slash": "x"},
		{"ctl": "a\nb\x00"},
		{"unicode": "ünïcødé ✓"},
		{"html": "<a>&</a>"},
	} {
		s, err := encodeMetadata(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMetadata(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !maps.Equal(got, m) {
			t.Fatalf("round trip of %v gave %v (%q)", m, got, s)
		}
	}
}
