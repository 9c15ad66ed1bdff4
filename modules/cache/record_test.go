package cachelease

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
	`{"fxelection_cache":2,"record":{}}`,
	`{"fxelection_cache":1}`,
	`{"fxelection_cache":1,"record":null}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"\xff\xfe\xfd","term":5,"duration_ms":60000}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"a\u001b[2J","term":5,"duration_ms":60000}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":5,"duration_ms":9223372036854775807}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":0,"duration_ms":60000}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":18446744073709551615,"duration_ms":60000}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"other","holder":"a","term":5,"duration_ms":60000}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"","holder":"a","term":5,"duration_ms":60000}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":5,"duration_ms":-1}}`,
	`{"fxelection_cache":1,"record":{"fxelection":1,"election":"billing","holder":"a","term":5,"duration_ms":60000,"metadata":{"k\n":"v"}}}`,
	`{"fxelection_cache":1,"record":"fxe1|5|3|abc|60000|0|"}`,
	strings.Repeat(" ", MaxValueBytes+1),
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

// validKey reports whether key is valid for both memcached (no spaces or
// control characters) and NATS KV ([-/_=.a-zA-Z0-9], no empty tokens).
func validKey(key string) bool {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(keyChar(c) || c == '.' || c == '=' || c == '/') {
			return false
		}
	}
	return true
}

var keySeeds = []string{
	"billing", "a b", "a.b", "a=b", "=41", "é", "\x00", "../../etc/passwd", "a\r\nset x 0 0 1",
	"*", ">", "fxelection.>", strings.Repeat("é", 100), strings.Repeat("x", 200),
}

func TestKeysForHostileNames(t *testing.T) {
	seen := map[string]string{}
	for _, name := range keySeeds {
		k := keyFor(DefaultKeyPrefix, name, 250)
		if !validKey(k) || len(k) > 250 {
			t.Errorf("key for %q = %q: not a valid store key", name, k)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("names %q and %q share key %q", name, other, k)
		}
		seen[k] = name
	}
	if k := keyFor(DefaultKeyPrefix, "a.b", 0); k != "fxelection.a=2Eb" {
		t.Errorf("key for a.b = %q", k)
	}
	if k := keyFor(DefaultKeyPrefix, strings.Repeat("é", 100), 250); !strings.HasPrefix(k, DefaultKeyPrefix+hashMark) {
		t.Errorf("long name not hashed: %q", k)
	}
}

// FuzzKey: every name maps to a valid key; unhashed keys unescape to the
// name, and unescaping accepts only canonical escapes.
func FuzzKey(f *testing.F) {
	for _, s := range keySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return
		}
		k := keyFor(DefaultKeyPrefix, name, 250)
		if !validKey(k) || len(k) > 250 {
			t.Fatalf("key %q for %q is not a valid store key", k, name)
		}
		part := strings.TrimPrefix(k, DefaultKeyPrefix)
		got, ok := unescapeName(part)
		if strings.HasPrefix(part, hashMark) {
			if ok {
				t.Fatalf("hashed key part %q unescaped to %q", part, got)
			}
			return
		}
		if !ok || got != name {
			t.Fatalf("unescape(%q) = %q, %v; want %q", part, got, ok, name)
		}
		// Unescaping arbitrary text never panics and, when it succeeds,
		// escapes back to the same text.
		if n, ok := unescapeName(name); ok && escapeName(n) != name {
			t.Fatalf("unescape(%q) = %q, which escapes to %q", name, n, escapeName(n))
		}
	})
}

func TestNewRejectsBadPrefixes(t *testing.T) {
	for _, p := range []string{".x", "a..b", "a b", "a:b", "a*", "a>", "é"} {
		if err := checkPrefix(p); !errors.Is(err, ErrInvalidPrefix) {
			t.Errorf("checkPrefix(%q) = %v, want ErrInvalidPrefix", p, err)
		}
	}
	for _, p := range []string{"fxelection.", "app_", "a.b.", "x=y-"} {
		if err := checkPrefix(p); err != nil {
			t.Errorf("checkPrefix(%q) = %v", p, err)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestOptionsValidate: Validate is New's prefix check (characters and, for
// a store with a key limit, length), and its errors never quote the prefix.
func TestOptionsValidate(t *testing.T) {
	limited := Capabilities{MaxKeyLen: 250}
	long := strings.Repeat("p", 200)
	for _, tc := range []struct {
		prefix string
		caps   Capabilities
		ok     bool
	}{
		{"", limited, true},
		{"a.b_c=d-", limited, true},
		{long, Capabilities{}, true},
		{long, limited, false},
		{"a b", Capabilities{}, false},
		{".a", Capabilities{}, false},
		{"a..b", Capabilities{}, false},
	} {
		err := Options{KeyPrefix: tc.prefix}.Validate(tc.caps)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidPrefix) {
			t.Errorf("Validate(%q, %+v) = %v", tc.prefix, tc.caps, err)
		}
		if err != nil && tc.prefix != "" && strings.Contains(err.Error(), tc.prefix) {
			t.Errorf("error %q quotes the prefix", err)
		}
	}
}
