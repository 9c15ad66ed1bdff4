package config_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func TestHostPort(t *testing.T) {
	const secret = "s3cret-pw"
	for _, tc := range []struct {
		in   string
		want string // the error, "" for none
	}{
		{"h:6379", ""},
		{" redis.example:6379 ", ""},
		{"127.0.0.1:1", ""},
		{"[::1]:6379", ""},
		{"[fe80::1%eth0]:6379", ""},
		{":6379", ""},
		{"h:65535", ""},
		{"", "addr is empty"},
		{"  ", "addr is empty"},
		{"redis://u:" + secret + "@h:6379", "addr is a URL; give host:port"},
		{"h", "addr is not host:port"},
		{"::1", "addr is not host:port"},
		{"::1:6379", "addr is not host:port"},
		{"h:", "addr is not host:port (no port)"},
		{"h:0", "addr has a port that is not a number from 1 to 65535"},
		{"h:65536", "addr has a port that is not a number from 1 to 65535"},
		{"h:-1", "addr has a port that is not a number from 1 to 65535"},
		{"h:+1", "addr has a port that is not a number from 1 to 65535"},
		{"h:redis", "addr has a port that is not a number from 1 to 65535"},
		{"u:" + secret + "@h:6379", "addr is not host:port (it must not contain '@', '/', '?' or '#')"},
		{"h:6379/" + secret, "addr is not host:port (it must not contain '@', '/', '?' or '#')"},
		{"h:6379?" + secret, "addr is not host:port (it must not contain '@', '/', '?' or '#')"},
		{"h:6379#x", "addr is not host:port (it must not contain '@', '/', '?' or '#')"},
	} {
		err := modkit.HostPort("addr", tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("HostPort(%q) = %v", tc.in, err)
		case tc.want == "":
		case err == nil || err.Error() != tc.want:
			t.Errorf("HostPort(%q) = %v, want %q", tc.in, err, tc.want)
		case !errors.Is(err, modkit.ErrInvalidAddress):
			t.Errorf("HostPort(%q) = %v, does not match ErrInvalidAddress", tc.in, err)
		case strings.Contains(err.Error(), secret):
			t.Errorf("HostPort(%q) = %v: quotes the value", tc.in, err)
		}
	}
	if err := modkit.HostPort("", "h"); err == nil || err.Error() != "is not host:port" {
		t.Errorf(`HostPort("", "h") = %v, want the problem alone`, err)
	}
}

func TestHostPorts(t *testing.T) {
	for _, tc := range []struct {
		in    string
		addrs []string
		want  string
	}{
		{"h:1", []string{"h:1"}, ""},
		{" h:1 , [::1]:2,, ", []string{"h:1", "[::1]:2"}, ""},
		{"", nil, "addr: no address"},
		{" , ", nil, "addr: no address"},
		{"h:1,h", nil, "addr: address 2 is not host:port"},
		{"h:1,,redis://h:2", nil, "addr: address 2 is a URL; give host:port"},
		{"h:0", nil, "addr: address 1 has a port that is not a number from 1 to 65535"},
	} {
		addrs, err := modkit.HostPorts("addr", tc.in)
		if tc.want == "" {
			if err != nil || strings.Join(addrs, " ") != strings.Join(tc.addrs, " ") {
				t.Errorf("HostPorts(%q) = %q, %v, want %q", tc.in, addrs, err, tc.addrs)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, modkit.ErrInvalidAddress) || addrs != nil {
			t.Errorf("HostPorts(%q) = %q, %v, want %q", tc.in, addrs, err, tc.want)
		}
	}
	if _, err := modkit.HostPorts("", "h"); err == nil || err.Error() != "address 1 is not host:port" {
		t.Errorf(`HostPorts("", "h") = %v`, err)
	}
}

// testModule is a backend module built on modkit.Provisioned.
type testModule struct {
	Prefix string `json:"prefix,omitempty" option:"KeyPrefix"`
	Push   *bool  `json:"push,omitempty" option:"DisablePush"`
	Table  string `json:"table_name,omitempty"`
	Other  string `json:"other,omitempty" option:""`

	modkit.Provisioned[testModule]
}

func (testModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[testModule]("test.backends.provisioned", "a module for tests")
}

func (*testModule) Validate() error                { return nil }
func (*testModule) Provision(modkit.Context) error { return nil }

var _ modkit.ClientBackendModule = (*testModule)(nil)

func TestSettingLabel(t *testing.T) {
	for field, want := range map[string]string{
		"KeyPrefix":   "prefix",
		"DisablePush": "push",
		"Table":       "table_name",
		"Logger":      "Options.Logger",
		"":            "Options.",
	} {
		if got := modkit.SettingLabel[testModule](field); got != want {
			t.Errorf("SettingLabel(%q) = %q, want %q", field, got, want)
		}
		if got := modkit.SettingLabel[*testModule](field); got != want {
			t.Errorf("SettingLabel[*](%q) = %q, want %q", field, got, want)
		}
	}
	if got := modkit.SettingLabel[int]("KeyPrefix"); got != "Options.KeyPrefix" {
		t.Errorf("SettingLabel[int] = %q", got)
	}
}

func TestNewModuleInfo(t *testing.T) {
	info := testModule{}.ElectionModule()
	if info.ID != "test.backends.provisioned" || info.Doc != "a module for tests" {
		t.Fatalf("info %+v", info)
	}
	m, ok := info.New().(*testModule)
	if !ok || m == nil || m.Prefix != "" {
		t.Fatalf("New() = %#v", info.New())
	}
}

// closingBackend records Close.
type closingBackend struct {
	fxelection.Backend
	closed *[]string
	err    error
}

func (b closingBackend) Close() error { *b.closed = append(*b.closed, "backend"); return b.err }

func TestProvisioned(t *testing.T) {
	var m testModule
	if b, err := m.Backend(); b != nil || !errors.Is(err, config.ErrNotProvisioned) || !strings.Contains(err.Error(), "test.backends.provisioned") {
		t.Fatalf("Backend before Provision = %v, %v", b, err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatalf("Cleanup before Provision: %v", err)
	}

	var closed []string
	m.Own("first client", func() error { closed = append(closed, "first"); return nil })
	m.Own("nothing", nil)
	m.Own("second client", func() error { closed = append(closed, "second"); return nil })
	b := closingBackend{Backend: memory.New(), closed: &closed}
	m.Provide(b)
	if got, err := m.Backend(); err != nil || got != fxelection.Backend(b) {
		t.Fatalf("Backend = %v, %v", got, err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(closed, " ") != "backend second first" {
		t.Fatalf("closed %q, want the backend, then the clients last first", closed)
	}
	if _, err := m.Backend(); !errors.Is(err, config.ErrNotProvisioned) {
		t.Fatalf("Backend after Cleanup: %v", err)
	}
	if err := m.Cleanup(); err != nil || len(closed) != 3 {
		t.Fatalf("second Cleanup: %v, closed %q", err, closed)
	}
}

func TestProvisionedCleanupErrors(t *testing.T) {
	const pw = "hunter2-pw"
	var m testModule
	var closed []string
	m.Own("redis client", func() error { return errors.New("auth " + pw + " refused") }, pw)
	m.Own("pool", func() error { return context.Canceled })
	m.Provide(closingBackend{Backend: memory.New(), closed: &closed, err: errors.New("stuck")})
	err := m.Cleanup()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"close backend: stuck", "close redis client: auth", "close pool: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("error %q shows the password", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %q does not wrap the client's", err)
	}
	// A failed Provision: a client owned, no Backend.
	var failed testModule
	failed.Own("client", func() error { closed = append(closed, "failed's client"); return nil })
	if err := failed.Cleanup(); err != nil || closed[len(closed)-1] != "failed's client" {
		t.Fatalf("Cleanup after a failed Provision: %v, %q", err, closed)
	}
}

// TestProvisionedModuleDecodes: a module built on Provisioned registers and
// decodes (Provisioned adds no setting).
func TestProvisionedModuleDecodes(t *testing.T) {
	m := &testModule{}
	if err := config.Unmarshal([]byte(`{"prefix": "p", "table_name": "t"}`), m); err != nil {
		t.Fatal(err)
	}
	if m.Prefix != "p" || m.Table != "t" {
		t.Fatalf("%+v", m)
	}
	if err := config.Unmarshal([]byte(`{"Provisioned": {}}`), &testModule{}); !errors.Is(err, config.ErrUnknownKey) {
		t.Fatalf("Provisioned as a setting: %v", err)
	}
}

// FuzzHostPort: HostPort and HostPorts agree, an accepted address splits
// into a host and a port from 1 to 65535, and no error quotes the input
// (it may hold a password).
func FuzzHostPort(f *testing.F) {
	for _, s := range []string{"redis:6379", "[::1]:6379", ":1", "redis://u:p@h:1", "h:0", "h:65536", "a@b:1", "h:1,h:2", "", " , "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := modkit.HostPort("addr", s)
		if err != nil {
			if !errors.Is(err, modkit.ErrInvalidAddress) {
				t.Fatalf("%q: %v does not match ErrInvalidAddress", s, err)
			}
			if tr := strings.TrimSpace(s); len(tr) >= 4 && strings.Contains(err.Error(), tr) {
				t.Fatalf("%q: error %q quotes the address", s, err)
			}
		} else {
			_, port, serr := net.SplitHostPort(strings.TrimSpace(s))
			n, perr := strconv.Atoi(port)
			if serr != nil || perr != nil || n < 1 || n > 65535 {
				t.Fatalf("%q accepted, but its port %q is not 1-65535 (%v)", s, port, serr)
			}
		}
		if !strings.Contains(s, ",") {
			addrs, lerr := modkit.HostPorts("addr", s)
			if (lerr == nil) != (err == nil && strings.TrimSpace(s) != "") || lerr == nil && (len(addrs) != 1 || addrs[0] != strings.TrimSpace(s)) {
				t.Fatalf("%q: HostPort %v, HostPorts %v %v", s, err, addrs, lerr)
			}
		}
	})
}
