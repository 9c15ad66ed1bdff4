package s3lease

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

const fuzzElection = "demo"

// encode and decode are the object codec (caslease.Bytes).
func encode(l fxelection.Lease, released bool) ([]byte, error) {
	return backendkit.MarshalValue(l, released)
}

func decode(body []byte, election string) (backendkit.Value, error) {
	return backendkit.UnmarshalValue(body, election)
}

func fuzzEnvelope(released bool, record string) []byte {
	return []byte(fmt.Sprintf(`{"fxelection_value":1,"released":%t,"write":"00","record":%s}`, released, record))
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
	for _, r := range electiontest.HostileRecords(fuzzElection) {
		f.Add(fuzzEnvelope(false, r))
	}
	for _, seed := range [][]byte{
		fuzzEnvelope(true, `{"fxelection":1,"election":"other","holder":"x","term":5,"duration_ms":1000}`),
		[]byte(`{"fxelection_value":1,"released":false}`),
		[]byte(`{"fxelection_value":1,"fxelection_value":2}`),
		[]byte(`{"fxelection_value":1.5}`),
		[]byte(`not json`),
		[]byte(``),
		[]byte("\xff"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := decode(body, fuzzElection)
		if !electiontest.CheckDecoded(t, fuzzElection, s.Lease, err) {
			return
		}
		l := s.Lease
		again, err := encode(l, s.Released)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", l, err)
		}
		s2, err := decode(again, fuzzElection)
		if err != nil {
			t.Fatalf("re-encoded body %s does not decode: %v", again, err)
		}
		if !electiontesting.SameRecord(s2.Lease, l) || s2.Released != s.Released {
			t.Fatalf("round trip changed %+v (released %v) into %+v (released %v)", l, s.Released, s2.Lease, s2.Released)
		}
	})
}
