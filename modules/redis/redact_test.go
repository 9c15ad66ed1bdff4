package redislease

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestConfigModuleAddrNeverEchoed: an addr setting that is a URL or
// carries user info (a password pasted into it) is refused with an error
// that names the setting and contains neither the password nor the value;
// so do errors from other settings while the password is set.
func TestConfigModuleAddrNeverEchoed(t *testing.T) {
	const pw = "pw-in-the-addr-9f3"
	addrs := []string{
		"redis://:" + pw + "@127.0.0.1:6379/0",
		"redis://app-user:" + pw + "@127.0.0.1:6379",
		"rediss://app-user:" + pw + "@redis.example:6380/2",
		"unix://app-user:" + pw + "@/run/redis.sock",
		"app-user:" + pw + "@127.0.0.1:6379",
		":" + pw + "@127.0.0.1:6379",
		"127.0.0.1:6379,redis://:" + pw + "@127.0.0.2:6379",
		"redis://:" + pw + "@[::1",
	}
	for _, addr := range addrs {
		_, err := moduletest.Decode(`{"module": "fxelection.backends.redis", "addr": "`+addr+`"}`, nil)
		if err == nil {
			t.Errorf("addr %q accepted", addr)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "app-user") {
			t.Errorf("error %q leaks the addr's credentials", err)
		}
		if !strings.Contains(err.Error(), "addr:") || !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("error %q does not name the setting", err)
		}
	}
	// Errors about other settings never contain the password or user name.
	for _, rest := range []string{
		`"db": "x` + pw + `", "username": "app-user"`,
		`"prefix": "{` + pw + `"`,
		`"tls": "` + pw + `"`,
	} {
		_, err := moduletest.Decode(`{"module": "fxelection.backends.redis", "addr": "127.0.0.1:1", "password": "`+pw+`", `+rest+`}`, nil)
		if err == nil || strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "app-user") {
			t.Errorf("settings error %v: nil, or leaks a credential", err)
		}
	}
}

// TestErrorsRedacted: every error that leaves the backend is redacted with
// the client's password and user name, whatever the SDK put in it. Here the
// password is (by a configuration mistake) also part of the socket path, so
// go-redis's dial error contains it; it also covers the config module's
// backend and a wrong password on a real server.
func TestErrorsRedacted(t *testing.T) {
	const pw = "sock-secret-5d1c"
	dir := t.TempDir()
	sock := filepath.Join(dir, pw+".sock")
	client := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Password: pw, Username: "app-user-77",
		MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	b := mustNew(t, client, Options{DisablePush: true})
	e := electionName(t)
	l := fxelection.Lease{Election: e, Holder: "a", Term: 1, Duration: time.Minute}
	_, errA := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	_, errR := b.Renew(ctxT(t), l)
	errL := b.Release(ctxT(t), l)
	_, errG := b.Get(ctxT(t), e)
	for name, err := range map[string]error{"Acquire": errA, "Renew": errR, "Release": errL, "Get": errG} {
		if err == nil {
			t.Fatalf("%s on a missing socket succeeded", name)
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "app-user-77") {
			t.Errorf("%s: error %q leaks a credential", name, err)
		}
		if !strings.Contains(err.Error(), backendkit.Redacted) {
			t.Errorf("%s: error %q: the socket path should show as redacted", name, err)
		}
	}

	// A real server with a password; the backend is given a wrong one.
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	if err := admin.ConfigSet(ctxT(t), "requirepass", "the-right-one").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.ConfigSet(ctxT(t), "requirepass", "").Err() })
	admin2 := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "the-right-one"})
	t.Cleanup(func() { _ = admin2.Close() })
	m, err := moduletest.Decode(`{"module": "fxelection.backends.redis", "addr": "`+srv.Addr()+`", "password": "`+pw+`", "username": "default"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong, _, err := moduletest.Provision(t, ctxT(t), m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Get(ctxT(t), e)
	if err == nil || errors.Is(err, backendkit.ErrNoLease) || strings.Contains(err.Error(), pw) {
		t.Fatalf("Get with a wrong password: %v", err)
	}
	// Held errors keep their holder through the redaction.
	right := mustNew(t, admin2, Options{})
	if _, err := right.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "x-" + "the-right-one", Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, err = right.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "y", Duration: time.Minute})
	var held *backendkit.HeldError
	if !errors.As(err, &held) || !errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("Acquire of a held lease: %v, want a HeldError", err)
	}
	if strings.Contains(err.Error(), "the-right-one") {
		t.Fatalf("held error %q shows the password", err)
	}
	_ = os.Remove(sock)
}
