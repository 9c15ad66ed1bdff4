package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/testtier"
)

// adminRuntime is a runtime running adminDoc (one election on the
// in-memory backend).
func adminRuntime(t *testing.T) *config.Runtime {
	t.Helper()
	rt := config.NewRuntime(config.RuntimeOptions{})
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	doc, err := config.Parse([]byte(adminDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Apply(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	return rt
}

// adminRequest sends one request to h and returns the recorder.
func adminRequest(h http.Handler, method, target, ctype, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://127.0.0.1:2019"+target, strings.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestAdminLoadRefusesPlaceholders: by default a POST /load whose document
// holds a {file.PATH} or {env.NAME} placeholder is refused (400) naming the
// setting and the placeholder's kind, never the file, the variable or a
// value; nothing is read or dialled (the Redis "server" it names sees no
// connection) and the running election stays. With
// --admin-allow-placeholders they are resolved.
func TestAdminLoadRefusesPlaceholders(t *testing.T) {
	rt := adminRuntime(t)
	before := rt.Electors()[0]
	secretFile := filepath.Join(t.TempDir(), "root-only-secret")
	if err := os.WriteFile(secretFile, []byte("the-secret-content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FXE_ADMIN_TEST_SECRET", "the-secret-variable")
	redis := listenNoDial(t) // fails the test if anything connects
	h := adminHandler(rt, adminPolicy{localOnly: true}, slog.New(slog.DiscardHandler))
	for _, tt := range []struct {
		doc, want string
	}{
		{`{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.redis", "addr": "` + redis + `", "password": "{file.` + secretFile + `}"}}]}`,
			"elections[0].backend.password: placeholder: {file.PATH}: not allowed here"},
		{`{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.redis", "addr": "` + redis + `", "password": "x{env.FXE_ADMIN_TEST_SECRET}"}}]}`,
			"elections[0].backend.password: placeholder: {env.NAME}: not allowed here"},
		{"elections:\n  - name: a\n    identity: '{env.FXE_ADMIN_TEST_SECRET}'\n    backend: {module: fxelection.backends.memory}\n",
			"elections[0].identity: placeholder: {env.NAME}: not allowed here"},
	} {
		ctype := "application/json"
		if !strings.HasPrefix(tt.doc, "{") {
			ctype = "application/yaml"
		}
		w := adminRequest(h, "POST", "/load", ctype, tt.doc)
		body := w.Body.String()
		if w.Code != http.StatusBadRequest || !strings.Contains(body, tt.want) || !strings.Contains(body, "--admin-allow-placeholders") {
			t.Errorf("POST /load with a placeholder: %d\n%s\nwant 400 with %q", w.Code, body, tt.want)
		}
		for _, leak := range []string{secretFile, "FXE_ADMIN_TEST_SECRET", "the-secret"} {
			if strings.Contains(body, leak) {
				t.Errorf("the answer names %q:\n%s", leak, body)
			}
		}
		if es := rt.Electors(); len(es) != 1 || es[0] != before {
			t.Fatalf("a refused load changed the running elections")
		}
	}

	// Allowed: the placeholder is resolved in this process.
	allowed := adminHandler(rt, adminPolicy{localOnly: true, allowPlaceholders: true}, slog.New(slog.DiscardHandler))
	doc := `{"elections": [{"name": "a", "identity": "{env.FXE_ADMIN_TEST_SECRET}", "backend": {"module": "fxelection.backends.memory"}}]}`
	if w := adminRequest(allowed, "POST", "/load", "application/json", doc); w.Code != 200 {
		t.Fatalf("POST /load with a placeholder, allowed: %d %s", w.Code, w.Body)
	}
	if es := rt.Electors(); len(es) != 1 || es[0].Status().Identity != "the-secret-variable" {
		t.Errorf("after an allowed load: %d electors", len(es))
	}
}

// TestAdminToken: with a token every request must carry it as a bearer
// token: none, another one, a longer or shorter one, or another scheme is
// 401 (with WWW-Authenticate) and changes nothing; the right one is served.
func TestAdminToken(t *testing.T) {
	rt := adminRuntime(t)
	before := rt.Electors()[0]
	const token = "0123456789abcdef-admin-token"
	h := adminHandler(rt, adminPolicy{localOnly: true, token: token}, slog.New(slog.DiscardHandler))
	load := `{"elections": [{"name": "b", "backend": {"module": "fxelection.backends.memory"}}]}`
	for _, auth := range []string{"", "Bearer ", "Bearer wrong", "Bearer " + token + "x", "Bearer " + token[:len(token)-1], "Basic " + token, "bearer" + token, token} {
		header := []string{"Authorization", auth}
		if w := adminRequest(h, "GET", "/config", "", "", header...); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" ||
			strings.Contains(w.Body.String(), `"name"`) {
			t.Errorf("GET /config with Authorization %q: %d %q, want 401", auth, w.Code, w.Body)
		}
		if w := adminRequest(h, "POST", "/load", "application/json", load, header...); w.Code != http.StatusUnauthorized {
			t.Errorf("POST /load with Authorization %q: %d, want 401", auth, w.Code)
		}
		if w := adminRequest(h, "POST", "/resign?election=a", "", "", header...); w.Code != http.StatusUnauthorized {
			t.Errorf("POST /resign with Authorization %q: %d, want 401", auth, w.Code)
		}
	}
	if es := rt.Electors(); len(es) != 1 || es[0] != before {
		t.Fatal("an unauthorised request changed the running elections")
	}
	if w := adminRequest(h, "GET", "/config", "", "", "Authorization", "Bearer "+token); w.Code != 200 || !strings.Contains(w.Body.String(), `"name": "a"`) {
		t.Errorf("GET /config with the token: %d %s", w.Code, w.Body)
	}
	if w := adminRequest(h, "POST", "/load", "application/json", load, "Authorization", "Bearer "+token); w.Code != 200 {
		t.Errorf("POST /load with the token: %d %s", w.Code, w.Body)
	}
}

// TestAdminTCPNeedsCredential: a TCP admin endpoint without a token is
// refused before anything starts (exit 2, naming --admin); the token comes
// from FXELECTION_ADMIN_TOKEN or --admin-token-file, whose problems are
// named without the token.
func TestAdminTCPNeedsCredential(t *testing.T) {
	file := writeFile(t, "doc.json", adminDoc)
	// An address in use: a program that started anyway fails at once
	// instead of running.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"run", "--config", file, "--admin", busy.Addr().String(), "--http", ""}, &out, &errOut, noEnv)
	if code != 2 || !strings.HasPrefix(errOut.String(), "example-app: --admin: a TCP admin endpoint needs a credential: --admin-token-file FILE or FXELECTION_ADMIN_TOKEN") {
		t.Errorf("run with a TCP --admin and no token: exit %d, stderr %q", code, errOut.String())
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "FXELECTION_ADMIN_TOKEN" {
				return v
			}
			return ""
		}
	}
	if _, err := parseArgs([]string{"run", "--config", file, "--admin", "127.0.0.1:1"}, env("0123456789abcdef")); err != nil {
		t.Errorf("with FXELECTION_ADMIN_TOKEN: %v", err)
	}
	dir := t.TempDir()
	short, good := filepath.Join(dir, "short"), filepath.Join(dir, "good")
	if err := os.WriteFile(short, []byte("tiny-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("0123456789abcdef-from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		env  func(string) string
		want string // "" for the token read
	}{
		{[]string{"--admin-token-file", good}, noEnv, ""},
		{[]string{"--admin-token-file", short}, noEnv, "--admin-token-file: the token must be 16 to 4096 bytes long"},
		{[]string{"--admin-token-file", filepath.Join(dir, "missing")}, noEnv, "--admin-token-file: cannot read the token: no such file or directory"},
		{[]string{"--admin-token-file", dir}, noEnv, "--admin-token-file: cannot read the token: not a regular file"},
		{nil, env("tiny-secret"), "FXELECTION_ADMIN_TOKEN: the token must be 16 to 4096 bytes long"},
		{nil, env("0123456789abcdef tiny-secret"), "FXELECTION_ADMIN_TOKEN: the token must be printable ASCII without spaces (byte 16 is not)"},
	} {
		o, err := parseArgs(append([]string{"run", "--config", file, "--admin", "127.0.0.1:1"}, tt.args...), tt.env)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		token, err := o.adminCredential()
		switch {
		case tt.want == "" && (err != nil || token != "0123456789abcdef-from-a-file"):
			t.Errorf("%q: token of %d bytes, %v", tt.args, len(token), err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "tiny"):
			t.Errorf("%q: the error quotes the token: %v", tt.args, err)
		}
	}
}

// TestAdminSocket: the admin endpoint's unix socket has the permission
// bits asked for (0600 by default) from its creation; a path that is not a
// socket is refused and left alone, a stale socket is replaced, a live one
// is refused; the default's private directory is created 0700 and refused
// when others may open it.
func TestAdminSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.sock")
	for _, mode := range []os.FileMode{0o600, 0o660} {
		ln, err := listenSocket(path, mode, false)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != mode {
			t.Errorf("socket with mode %04o: %v %v", mode, fi.Mode(), err)
		}
		ln.Close()
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket outlived its listener: %v", err)
		}
	}
	// The default's bits, as run sets them.
	o, err := parseArgs([]string{"run", "--config", "f.json"}, noEnv)
	if err != nil || o.adminMode != 0o600 || o.adminAddr != "unix/"+defaultAdminSocket() {
		t.Errorf("defaults: --admin %s --admin-socket-mode %04o, %v", o.adminAddr, o.adminMode, err)
	}

	// Not a socket: refused, untouched.
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listenSocket(path, 0o600, false); err == nil || !strings.Contains(err.Error(), "exists and is not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file was changed: %q %v", b, err)
	}
	os.Remove(path)

	// Stale (its process died): replaced.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ln, err := listenSocket(path, 0o600, false)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	// Live: refused, and the live one keeps working.
	if _, err := listenSocket(path, 0o600, false); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Errorf("over a live socket: %v", err)
	}
	live, accepted := ln, make(chan struct{})
	go func() {
		defer close(accepted)
		if c, err := live.Accept(); err == nil {
			c.Close()
		}
	}()
	if c, err := net.DialTimeout("unix", path, 30*time.Second); err != nil {
		t.Errorf("the live socket stopped answering: %v", err)
	} else {
		c.Close()
	}
	live.Close()
	<-accepted

	// The private directory.
	private := filepath.Join(dir, "private")
	ln, err = listenSocket(filepath.Join(private, "admin.sock"), 0o600, true)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if fi, err := os.Stat(private); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("private directory: %v %v", fi.Mode(), err)
	}
	if err := os.Chmod(private, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := listenSocket(filepath.Join(private, "admin.sock"), 0o600, true); err == nil || !strings.Contains(err.Error(), "nobody else may open") {
		t.Errorf("a private directory others may open: %v", err)
	}
	// No directory (not the default): refused, nothing created.
	if _, err := listenSocket(filepath.Join(dir, "none", "admin.sock"), 0o600, false); err == nil {
		t.Error("a socket in a missing directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory was created: %v", err)
	}
}

// TestAdminEndToEnd runs "example-app run" twice, on the in-memory backend.
// On TCP with --admin-token-file: requests without the token, or with
// another, get 401, with it 200, and reload sends it. On a unix socket (the
// default kind): the socket is 0600 and reload reaches it.
func TestAdminEndToEnd(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	file := writeFile(t, "doc.json", adminDoc)
	dir := t.TempDir()
	tokenFile, wrongFile := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	const token = "0123456789abcdef-e2e-token"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongFile, []byte("0123456789abcdef-not-the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := freeAddr(t)
	p := &procs{t: t, noID: true}
	p.start("run", "--config", file, "--http", freeAddr(t), "--admin", admin, "--admin-token-file", tokenFile, "--log-format", "json")
	waitAdmin(t, admin)
	for _, auth := range []string{"", "Bearer 0123456789abcdef-not-the-token"} {
		if code, _ := adminGet(t, admin, auth); code != http.StatusUnauthorized {
			t.Errorf("GET /config over TCP with Authorization %q: %d, want 401", auth, code)
		}
	}
	if code, body := adminGet(t, admin, "Bearer "+token); code != 200 || !strings.Contains(body, `"name": "a"`) {
		t.Errorf("GET /config with the token: %d %s", code, body)
	}
	if code, out, errOut := reloadCmd(t, "--config", file, "--admin", admin, "--admin-token-file", tokenFile); code != 0 || !strings.Contains(out, "loaded: 1 election running") {
		t.Errorf("reload with the token: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := reloadCmd(t, "--config", file, "--admin", admin, "--admin-token-file", wrongFile); code != 1 || !strings.Contains(errOut, "401 Unauthorized") {
		t.Errorf("reload with another token: exit %d, %q", code, errOut)
	}
	if code, _, errOut := reloadCmd(t, "--config", file, "--admin", admin); code != 2 || !strings.Contains(errOut, "--admin: a TCP admin endpoint needs a credential") {
		t.Errorf("reload over TCP without a token: exit %d, %q", code, errOut)
	}

	sock := filepath.Join(dir, "admin.sock")
	p.start("run", "--config", file, "--http", freeAddr(t), "--admin", "unix/"+sock, "--log-format", "json")
	waitAdmin(t, "unix/"+sock)
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("the admin socket: %v %v", fi.Mode(), err)
	}
	if code, out, errOut := reloadCmd(t, "--config", file, "--admin", "unix/"+sock); code != 0 || !strings.Contains(out, "loaded: 1 election running") {
		t.Errorf("reload over the socket: exit %d, %q %q", code, out, errOut)
	}
}

// adminGet is GET /config on the admin endpoint admin with an
// Authorization header auth ("" for none).
func adminGet(t *testing.T, admin, auth string) (int, string) {
	t.Helper()
	client, base := adminClient(admin)
	req, err := http.NewRequest("GET", base+"/config", nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitAdmin waits (generously: the process starts under -race on a busy
// machine) until the admin endpoint admin accepts connections.
func waitAdmin(t *testing.T, admin string) {
	t.Helper()
	network, addr := "tcp", admin
	if path, ok := socketPath(admin); ok {
		network, addr = "unix", path
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin endpoint %s never answered: %v", admin, err)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, os.ErrNotExist) {
			t.Logf("dial %s: %v", admin, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
