package bloblease

import (
	"encoding/base64"
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

// FuzzDecodeMeta checks the blob metadata decoder, the boundary between a
// container anyone with the key may write to and the elector. The input is
// the metadata value itself (as stored) and, separately, the record bytes
// it would carry (base64-encoded here). Properties: it never panics;
// rejections are recordInvalid with an error matching ErrInvalidRecord in
// printable text; an accepted record passes Lease.Validate, names
// the election, and re-encodes (encodeMeta) to a value that decodes to the
// same lease.
//
// The seed corpus (hostile holders, terms and durations from issue 9) runs
// with every `go test`; `go test -fuzz FuzzDecodeMeta ./modules/blob`
// explores further.
func FuzzDecodeMeta(f *testing.F) {
	good := fxelection.Lease{Election: fuzzElection, Holder: "node-a", Metadata: map[string]string{"addr": "10.0.0.1:80"}, Term: 7, Duration: 15e9}
	if v, err := encodeMeta(good); err == nil {
		f.Add(v)
		raw, _ := base64.StdEncoding.DecodeString(v)
		f.Add(string(raw))
	}
	for _, seed := range []string{
		fuzzRecord("\xff\xfe\xfd", "5", "60000"),
		fuzzRecord(`a\u0000b`, "5", "60000"),
		fuzzRecord(`\u001b[2J`, "5", "60000"),
		fuzzRecord(`a\u202eb`, "5", "60000"),
		fuzzRecord(`\ud800`, "5", "60000"),
		fuzzRecord("x", "0", "60000"),
		fuzzRecord("x", "9223372036854775807", "60000"),
		fuzzRecord("x", "9223372036854775808", "60000"),
		fuzzRecord("x", "18446744073709551615", "60000"),
		fuzzRecord("x", "18446744073709551616", "60000"),
		fuzzRecord("x", "5", fmt.Sprint(int64(math.MaxInt64))),
		fuzzRecord("x", "5", fmt.Sprint(int64(math.MaxInt64/1000+1))),
		fuzzRecord("x", "5", "-1"),
		`{"fxelection":1,"election":"other","holder":"x","term":5,"duration_ms":1000}`,
		`{"fxelection":1,"election":"demo","holder":"x","metadata":{"k":"\u0007"},"term":5,"duration_ms":1000}`,
		`{"fxelection":1,"election":"demo","holder":"x","metadata":{},"term":5,"duration_ms":1000,"acquired_at":"2026-01-01T05:00:00+05:00"}`,
		`{"fxelection":1,"election":"demo","holder":"x","term":5,"duration_ms":1000,"acquired_at":"9999-12-31T23:59:59-01:00"}`,
		`null`,
		"%%% not base64",
		"ZnhlbGVjdGlvbg",
		"",
		"\xff",
	} {
		f.Add(seed)
		f.Add(base64.StdEncoding.EncodeToString([]byte(seed)))
	}
	f.Fuzz(func(t *testing.T, in string) {
		check(t, in)
		check(t, base64.StdEncoding.EncodeToString([]byte(in)))
	})
}

func check(t *testing.T, value string) {
	state, l, err := decodeMeta(map[string]*string{"Fxelection": &value}, fuzzElection)
	switch state {
	case recordInvalid:
		if !errors.Is(err, fxelection.ErrInvalidRecord) {
			t.Fatalf("invalid with %v, want ErrInvalidRecord", err)
		}
		if !utf8.ValidString(err.Error()) || hasControl(err.Error()) {
			t.Fatalf("error text is not printable UTF-8: %q", err)
		}
		return
	case recordValid:
	default:
		t.Fatalf("state %d for a present value", state)
	}
	if err != nil {
		t.Fatalf("valid with error %v", err)
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("accepted a lease CheckLease rejects: %v", err)
	}
	if l.Election != fuzzElection || l.Term == 0 || l.Term > fxelection.MaxTerm || l.Duration <= 0 {
		t.Fatalf("accepted %+v", l)
	}
	texts := []string{l.Holder}
	for k, v := range l.Metadata {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || hasControl(s) {
			t.Fatalf("accepted text %q", s)
		}
	}
	again, err := encodeMeta(l)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", l, err)
	}
	state2, l2, err := decodeMeta(map[string]*string{"fxelection": &again}, fuzzElection)
	if state2 != recordValid || err != nil {
		t.Fatalf("re-encoded value %q does not decode: %v", again, err)
	}
	if l2.Election != l.Election || l2.Holder != l.Holder || l2.Term != l.Term || l2.Duration != l.Duration ||
		!l2.AcquiredAt.Equal(l.AcquiredAt) || len(l2.Metadata) != len(l.Metadata) || !maps.Equal(l2.Metadata, l.Metadata) {
		t.Fatalf("round trip changed %+v into %+v", l, l2)
	}
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
