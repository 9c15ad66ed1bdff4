package caslease

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

func validLease() fxelection.Lease {
	return fxelection.Lease{
		Election:   "billing",
		Holder:     "web-1",
		Metadata:   map[string]string{"addr": "10.0.0.1:8080"},
		Term:       1764512345678901,
		Duration:   15 * time.Second,
		AcquiredAt: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC),
	}
}

// decodeSeeds are hostile values: each must give ErrInvalidRecord.
var decodeSeeds = []string{
	"",
	"\x00not a lease record",
	"null",
	"[]",
	`{}`,
	`{"fxelection_value":2,"record":{}}`,
	`{"fxelection_value":1}`,
	`{"fxelection_value":1,"record":null}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"\xff\xfe\xfd","term":5,"duration_ms":60000}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"a\u001b[2J","term":5,"duration_ms":60000}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":5,"duration_ms":9223372036854775807}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":0,"duration_ms":60000}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":18446744073709551615,"duration_ms":60000}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"other","holder":"a","term":5,"duration_ms":60000}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"","holder":"a","term":5,"duration_ms":60000}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":5,"duration_ms":-1}}`,
	`{"fxelection_value":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":5,"duration_ms":60000,"metadata":{"k\n":"v"}}}`,
	`{"fxelection_value":1,"record":"fxe1|5|3|abc|60000|0|"}`,
	strings.Repeat(" ", backendkit.MaxValueBytes+1),
}

func TestDecodeRejectsHostileValues(t *testing.T) {
	for _, s := range decodeSeeds {
		if _, err := decode([]byte(s), "billing"); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("decode(%.60q) = %v, want ErrInvalidRecord", s, err)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, released := range []bool{false, true} {
		l := validLease()
		v, err := encode(l, released)
		if err != nil {
			t.Fatal(err)
		}
		v2, _ := encode(l, released)
		if string(v) == string(v2) {
			t.Fatal("two writes stored the same bytes: the nonce is missing")
		}
		s, err := decode(v, "billing")
		if err != nil {
			t.Fatal(err)
		}
		if s.Released != released || !reflect.DeepEqual(s.Lease, l) {
			t.Fatalf("round trip: %+v released=%v, want %+v released=%v", s.Lease, s.Released, l, released)
		}
	}
}

// FuzzDecode: decoding never panics, anything that decodes passes
// CheckLease, and re-encodes to a value that decodes to the same lease.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, released := range []bool{false, true} {
		v, err := encode(validLease(), released)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		s, err := decode(value, "")
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("decode error %v does not match ErrInvalidRecord", err)
			}
			return
		}
		if err := s.Lease.Validate(); err != nil {
			t.Fatalf("decoded an invalid lease: %v", err)
		}
		v, err := encode(s.Lease, s.Released)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		s2, err := decode(v, s.Lease.Election)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if s2.Released != s.Released || !sameLease(s.Lease, s2.Lease) {
			t.Fatalf("re-decode: %+v, want %+v", s2.Lease, s.Lease)
		}
	})
}

func sameLease(a, b fxelection.Lease) bool {
	if len(a.Metadata) == 0 && len(b.Metadata) == 0 {
		a.Metadata, b.Metadata = nil, nil
	}
	return a.Election == b.Election && a.Holder == b.Holder && a.Term == b.Term &&
		a.Duration == b.Duration && a.AcquiredAt.Equal(b.AcquiredAt) && reflect.DeepEqual(a.Metadata, b.Metadata)
}

// encode and decode are the codec Bytes uses.
func encode(l fxelection.Lease, released bool) ([]byte, error) {
	return backendkit.MarshalValue(l, released)
}

func decode(value []byte, election string) (backendkit.Value, error) {
	return backendkit.UnmarshalValue(value, election)
}
