package backendkit_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

func TestRecordCodec(t *testing.T) {
	in := fxelection.Lease{Election: "e", Holder: "h", Metadata: map[string]string{"a": "b"}, Term: 7, Duration: 1500 * time.Millisecond}
	raw, err := backendkit.MarshalRecord(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := backendkit.UnmarshalRecord(raw)
	if err != nil || out.Holder != "h" || out.Term != 7 || out.Duration != in.Duration || out.Metadata["a"] != "b" {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	for _, bad := range []string{"", "garbage", `{"fxelection":2,"holder":"h","term":1,"duration_ms":1}`, `{"fxelection":1,"term":1,"duration_ms":1}`,
		`{"fxelection":1,"holder":"h","duration_ms":1}`, `{"fxelection":1,"holder":"h","term":1}`, `{"fxelection":1,"holder":"h","term":1,"duration_ms":1,"metadata":{"a":1}}`, `[1,2]`} {
		if _, err := backendkit.UnmarshalRecord([]byte(bad)); err == nil || !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("UnmarshalRecord(%q) = %v, want ErrInvalidRecord", bad, err)
		}
	}
}

// FuzzUnmarshalRecord is in fuzz_test.go.

func TestExpiryTracker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr backendkit.ExpiryTracker
		if tr.Expired("e", "v1", "n1", time.Second) {
			t.Fatal("expired at first sight")
		}
		time.Sleep(999 * time.Millisecond)
		if tr.Expired("e", "v1", "n1", time.Second) {
			t.Fatal("expired early")
		}
		time.Sleep(time.Millisecond)
		if !tr.Expired("e", "v1", "n1", time.Second) {
			t.Fatal("not expired after a full duration unchanged")
		}
		if tr.Expired("e", "v2", "n1", time.Second) {
			t.Fatal("a new version restarts the clock")
		}
		time.Sleep(time.Second)
		// The store was re-created: its versions start again, so the new
		// leader's first write repeats a version seen long before.
		if tr.Expired("e", "v2", "n2", time.Second) {
			t.Fatal("a repeated version with a new write nonce must restart the clock")
		}
		if tr.Expired("other", "v2", "n2", 0) {
			t.Fatal("elections are tracked separately")
		}
		tr.Forget("e")
		if tr.Expired("e", "v2", "n2", 0) {
			t.Fatal("forgotten election must be seen again first")
		}
	})
}

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ msg, want string }{
		{"dial user:hunter22@host failed", "dial user:xxxxx@host failed"},
		{"no secret here", "no secret here"},
		{"key abc leaked", "invalid configuration (details withheld: they may contain a secret)"},
	} {
		if got := backendkit.RedactText(tt.msg, "hunter22", "", "abc"); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

func TestValueCodec(t *testing.T) {
	l := fxelection.Lease{Election: "jobs", Holder: "a", Term: 7, Duration: time.Second, Metadata: map[string]string{"k": "v"}}
	b1, err := backendkit.MarshalValue(l, true)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := backendkit.MarshalValue(l, true)
	if string(b1) == string(b2) {
		t.Fatal("two writes stored the same bytes (no nonce)")
	}
	v, err := backendkit.UnmarshalValue(b1, "jobs")
	back, released := v.Lease, v.Released
	if err != nil || !released || back.Holder != "a" || back.Term != 7 || back.Metadata["k"] != "v" || v.Write == "" {
		t.Fatalf("round trip: %+v %v %v", back, released, err)
	}
	if _, err := backendkit.UnmarshalValue(b1, "other"); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("record of another election: %v", err)
	}
	if _, err := backendkit.UnmarshalValue(b1, ""); err != nil {
		t.Fatalf("any election: %v", err)
	}
	rec := `{"fxelection":1,"election":"jobs","holder":"a","term":3,"duration_ms":1000}`
	for name, tc := range map[string]struct {
		v  string
		ok bool
	}{
		"current format":          {`{"fxelection_value":1,"released":false,"write":"x","record":` + rec + `}`, true},
		"another format key":      {`{"fxelection_s3":1,"released":false,"write":"x","record":` + rec + `}`, false},
		"unknown format":          {`{"fxelection_value":2,"write":"x","record":` + rec + `}`, false},
		"no format":               {`{"write":"x","record":` + rec + `}`, false},
		"no record":               {`{"fxelection_value":1}`, false},
		"not JSON":                {"\x00garbage", false},
		"too large":               {`{"fxelection_value":1,"write":"` + strings.Repeat("x", backendkit.MaxValueBytes) + `"}`, false},
		"record without election": {`{"fxelection_value":1,"record":{"fxelection":1,"holder":"a","term":3,"duration_ms":1000}}`, false},
	} {
		l, err := backendkit.UnmarshalValue([]byte(tc.v), "")
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: %+v, %v", name, l, err)
		}
	}
}

// TestRecordNotHTMLEscaped: '<', '>' and '&' are stored as themselves (not
// as six-byte \u escapes, which made a record of 4,095 '<' six times its
// metadata), and a record written with the escapes, as another JSON
// writer may write it, still reads.
func TestRecordNotHTMLEscaped(t *testing.T) {
	md := strings.Repeat("<>&", 1365)
	in := fxelection.Lease{Election: "e", Holder: "h<1>", Metadata: map[string]string{"k": md}, Term: 7, Duration: time.Second}
	raw, err := backendkit.MarshalRecord(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `\u00`) || len(raw) > len(md)+200 || strings.HasSuffix(string(raw), "\n") {
		t.Errorf("record of %d bytes for %d bytes of metadata (escaped or with a newline)", len(raw), len(md))
	}
	old := `{"fxelection":1,"election":"e","holder":"h\u003c1\u003e","metadata":{"k":"\u003c\u003e\u0026"},"term":7,"duration_ms":1000}`
	out, err := backendkit.UnmarshalRecord([]byte(old))
	if err != nil || out.Holder != "h<1>" || out.Metadata["k"] != "<>&" {
		t.Errorf("an HTML-escaped record reads as %+v, %v", out, err)
	}
}
