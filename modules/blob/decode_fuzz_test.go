package bloblease

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

const fuzzElection = "demo"

// FuzzDecodeMeta checks the blob metadata decoder, the boundary between a
// container anyone with the key may write to and the elector. The input is
// the metadata value itself (as stored) and, separately, the record bytes
// it would carry (base64-encoded here), JSON or compact. Properties: it never panics;
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
	// A compact record (see encodeCompact), and one too large for JSON.
	f.Add(string(encodeCompact(good)))
	big := good
	big.Metadata = map[string]string{"k": strings.Repeat(`"`, 4000)}
	if v, err := encodeMeta(big); err == nil {
		f.Add(v)
	}
	for _, seed := range append(electiontest.HostileRecords(fuzzElection),
		"%%% not base64",
		"ZnhlbGVjdGlvbg",
		"",
		"\xff",
	) {
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
	if state != recordInvalid && state != recordValid {
		t.Fatalf("state %d for a present value", state)
	}
	if (state == recordInvalid) != (err != nil) {
		t.Fatalf("state %d with error %v", state, err)
	}
	if !electiontest.CheckDecoded(t, fuzzElection, l, err) {
		return
	}
	again, err := encodeMeta(l)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", l, err)
	}
	state2, l2, err := decodeMeta(map[string]*string{"fxelection": &again}, fuzzElection)
	if state2 != recordValid || err != nil {
		t.Fatalf("re-encoded value %q does not decode: %v", again, err)
	}
	if !electiontesting.SameRecord(l2, l) {
		t.Fatalf("round trip changed %+v into %+v", l, l2)
	}
}
