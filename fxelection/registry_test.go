package fxelection_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

func TestRegistry(t *testing.T) {
	names := fxelection.Backends()
	if len(names) == 0 || names[0] != "memory" {
		t.Fatalf("Backends() = %v, want memory registered", names)
	}
	b, err := fxelection.NewBackend(context.Background(), "memory", nil)
	if err != nil || fxelection.BackendName(b) != "memory" {
		t.Fatalf("NewBackend(memory) = %v, %v", b, err)
	}
	_, err = fxelection.NewBackend(context.Background(), "etcd", nil)
	if err == nil || !strings.Contains(err.Error(), `unknown backend "etcd"`) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("unknown backend error = %v", err)
	}
	for _, tt := range []struct {
		name string
		m    fxelection.BackendModule
		want string
	}{
		{"empty", fxelection.BackendModule{New: func(context.Context, fxelection.Settings) (fxelection.Backend, error) { return nil, nil }}, "empty name"},
		{"nil New", fxelection.BackendModule{Name: "x-nil"}, "nil New"},
		{"duplicate", fxelection.BackendModule{Name: "memory", New: func(context.Context, fxelection.Settings) (fxelection.Backend, error) { return nil, nil }}, `"memory" already registered`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tt.want) {
					t.Fatalf("panic %v, want %q", r, tt.want)
				}
			}()
			fxelection.RegisterBackend(tt.m)
		})
	}
}

func TestSettings(t *testing.T) {
	s := fxelection.Settings{"addr": "x:1", "db": "3", "tls": "true", "ttl": "1.5s", "bad": "zz"}
	if s.String("addr", "d") != "x:1" || s.String("none", "d") != "d" {
		t.Fatal("String")
	}
	if _, err := s.Required("password"); err == nil || !strings.Contains(err.Error(), `"password"`) {
		t.Fatalf("Required error %v", err)
	}
	if n, err := s.Int("db", 0); n != 3 || err != nil {
		t.Fatal("Int")
	}
	if b, err := s.Bool("tls", false); !b || err != nil {
		t.Fatal("Bool")
	}
	if d, err := s.Duration("ttl", 0); d != 1500*time.Millisecond || err != nil {
		t.Fatal("Duration")
	}
	for _, f := range []func() error{
		func() error { _, err := s.Int("bad", 0); return err },
		func() error { _, err := s.Bool("bad", false); return err },
		func() error { _, err := s.Duration("bad", 0); return err },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), `setting "bad"`) {
			t.Fatalf("error %v does not name the key", err)
		}
	}
}

func TestRecordCodec(t *testing.T) {
	in := fxelection.Lease{Election: "e", Holder: "h", Metadata: map[string]string{"a": "b"}, Term: 7, Duration: 1500 * time.Millisecond}
	raw, err := fxelection.MarshalRecord(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fxelection.UnmarshalRecord(raw)
	if err != nil || out.Holder != "h" || out.Term != 7 || out.Duration != in.Duration || out.Metadata["a"] != "b" {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	for _, bad := range []string{"", "garbage", `{"fxelection":2,"holder":"h","term":1,"duration_ms":1}`, `{"fxelection":1,"term":1,"duration_ms":1}`,
		`{"fxelection":1,"holder":"h","duration_ms":1}`, `{"fxelection":1,"holder":"h","term":1}`, `{"fxelection":1,"holder":"h","term":1,"duration_ms":1,"metadata":{"a":1}}`, `[1,2]`} {
		if _, err := fxelection.UnmarshalRecord([]byte(bad)); err == nil || !errorsIs(err, fxelection.ErrInvalidRecord) {
			t.Errorf("UnmarshalRecord(%q) = %v, want ErrInvalidRecord", bad, err)
		}
	}
}

// FuzzUnmarshalRecord is in fuzz_test.go.

func TestExpiryTracker(t *testing.T) {
	synctestRun(t, func(t *testing.T) {
		var tr fxelection.ExpiryTracker
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
		if got := fxelection.Redact(tt.msg, "hunter22", "", "abc"); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}
