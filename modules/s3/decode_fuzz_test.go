package s3lease

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
)

const fuzzElection = "demo"

func fuzzRecord(holder, term, durationMS string) string {
	return `{"fxelection":1,"election":"demo","holder":"` + holder + `","term":` + term +
		`,"duration_ms":` + durationMS + `,"acquired_at":"2026-01-01T00:00:00Z"}`
}

func fuzzEnvelope(released bool, record string) []byte {
	return []byte(fmt.Sprintf(`{"fxelection_s3":1,"released":%t,"write":"00","record":%s}`, released, record))
}

// FuzzDecodeObject checks the S3 object decoder, the boundary between a
// bucket anyone may write to and the elector: it never panics; whatever it
// rejects matches ErrInvalidRecord; whatever it accepts is a lease
// Lease.Validate accepts, with printable UTF-8 text, and re-encodes
// (encode) to a body that decodes to the same lease and released flag.
//
// The seed corpus (hostile holders, terms and durations from issue 9) runs
// with every `go test`; `go test -fuzz FuzzDecodeObject ./modules/s3`
// explores further.
func FuzzDecodeObject(f *testing.F) {
	good := fxelection.Lease{Election: fuzzElection, Holder: "node-a", Metadata: map[string]string{"addr": "10.0.0.1:80"}, Term: 7, Duration: 15e9}
	if body, err := encode(good, false); err == nil {
		f.Add(body)
	}
	if body, err := encode(good, true); err == nil {
		f.Add(body)
	}
	for _, seed := range [][]byte{
		fuzzEnvelope(false, fuzzRecord("\xff\xfe\xfd", "5", "60000")),
		fuzzEnvelope(false, fuzzRecord(`a\u0000b`, "5", "60000")),
		fuzzEnvelope(false, fuzzRecord(`\u001b[2J`, "5", "60000")),
		fuzzEnvelope(false, fuzzRecord(`a\u202eb`, "5", "60000")),
		fuzzEnvelope(false, fuzzRecord(`\ud800`, "5", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "0", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "9223372036854775807", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "9223372036854775808", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "18446744073709551615", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "18446744073709551616", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "1e3", "60000")),
		fuzzEnvelope(false, fuzzRecord("x", "5", fmt.Sprint(int64(math.MaxInt64)))),
		fuzzEnvelope(false, fuzzRecord("x", "5", fmt.Sprint(int64(math.MaxInt64/1000+1)))),
		fuzzEnvelope(false, fuzzRecord("x", "5", "-1")),
		fuzzEnvelope(false, fuzzRecord("x", "5", "0")),
		fuzzEnvelope(true, `{"fxelection":1,"election":"other","holder":"x","term":5,"duration_ms":1000}`),
		fuzzEnvelope(false, `{"fxelection":1,"election":"demo","holder":"x","metadata":{"":"v"},"term":5,"duration_ms":1000}`),
		fuzzEnvelope(false, `{"fxelection":1,"election":"demo","holder":"x","metadata":{"k":"\u0007"},"term":5,"duration_ms":1000}`),
		fuzzEnvelope(false, `{"fxelection":1,"election":"demo","holder":"x","metadata":{},"term":5,"duration_ms":1000,"acquired_at":"2026-01-01T05:00:00+05:00"}`),
		fuzzEnvelope(false, `{"fxelection":2,"election":"demo","holder":"x","term":5,"duration_ms":1000}`),
		fuzzEnvelope(false, `{"fxelection":1,"election":"demo","holder":"x","term":5,"duration_ms":1000,"acquired_at":"0000-01-01T00:00:00+01:00"}`),
		fuzzEnvelope(false, `{"fxelection":1,"election":"demo","holder":"x","term":5,"duration_ms":1000,"acquired_at":"9999-12-31T23:59:59-01:00"}`),
		fuzzEnvelope(false, `null`),
		fuzzEnvelope(false, `"string"`),
		[]byte(`{"fxelection_s3":1,"released":false}`),
		[]byte(`{"fxelection_s3":1,"fxelection_s3":2}`),
		[]byte(`{"fxelection_s3":1.5}`),
		[]byte(`not json`),
		[]byte(``),
		[]byte("\xff"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := decode(body, fuzzElection)
		if err != nil {
			if !errors.Is(err, fxelection.ErrInvalidRecord) {
				t.Fatalf("rejected with %v, want ErrInvalidRecord", err)
			}
			if !utf8.ValidString(err.Error()) || hasControl(err.Error()) {
				t.Fatalf("error text is not printable UTF-8: %q", err)
			}
			return
		}
		l := s.lease
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted a lease CheckLease rejects: %v", err)
		}
		if l.Election != fuzzElection || l.Term == 0 || l.Term > fxelection.MaxTerm || l.Duration <= 0 {
			t.Fatalf("accepted %+v", l)
		}
		for _, text := range append([]string{l.Holder}, slicesOf(l.Metadata)...) {
			if !utf8.ValidString(text) || hasControl(text) {
				t.Fatalf("accepted text %q", text)
			}
		}
		again, err := encode(l, s.released)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", l, err)
		}
		s2, err := decode(again, fuzzElection)
		if err != nil {
			t.Fatalf("re-encoded body %s does not decode: %v", again, err)
		}
		if !sameLease(s2.lease, l) || s2.released != s.released {
			t.Fatalf("round trip changed %+v (released %v) into %+v (released %v)", l, s.released, s2.lease, s2.released)
		}
	})
}

func slicesOf(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// sameLease compares the fields a record stores.
func sameLease(a, b fxelection.Lease) bool {
	return a.Election == b.Election && a.Holder == b.Holder && a.Term == b.Term && a.Duration == b.Duration &&
		a.AcquiredAt.Equal(b.AcquiredAt) && len(a.Metadata) == len(b.Metadata) && maps.Equal(a.Metadata, b.Metadata)
}
