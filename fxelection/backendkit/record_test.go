package backendkit_test

import (
	"errors"
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
		if _, err := backendkit.UnmarshalRecord([]byte(bad)); err == nil || !errors.Is(err, fxelection.ErrInvalidRecord) {
			t.Errorf("UnmarshalRecord(%q) = %v, want ErrInvalidRecord", bad, err)
		}
	}
}

// FuzzUnmarshalRecord is in fuzz_test.go.

func TestExpiryTracker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr backendkit.ExpiryTracker
		if tr.Expired("e", "v1", time.Second) {
			t.Fatal("expired at first sight")
		}
		time.Sleep(999 * time.Millisecond)
		if tr.Expired("e", "v1", time.Second) {
			t.Fatal("expired early")
		}
		time.Sleep(time.Millisecond)
		if !tr.Expired("e", "v1", time.Second) {
			t.Fatal("not expired after a full duration unchanged")
		}
		if tr.Expired("e", "v2", time.Second) {
			t.Fatal("a new version restarts the clock")
		}
		if tr.Expired("other", "v2", 0) {
			t.Fatal("elections are tracked separately")
		}
		tr.Forget("e")
		if tr.Expired("e", "v2", 0) {
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
