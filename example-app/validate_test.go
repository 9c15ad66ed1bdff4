package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenNoDial returns the address of a listener that fails the test if
// anything connects to it before the test ends.
func listenNoDial(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			t.Error("validate connected to a configured server")
		} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Error(err)
		}
		ln.Close()
	})
	return ln.Addr().String()
}

// runValidateCmd runs "example-app validate" with args in-process.
func runValidateCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"validate"}, args...), &out, &errOut, func(string) string { return "" })
	return code, out.String(), errOut.String()
}

// TestValidateValid: a valid document with servers to dial exits 0 with
// one summary line, and nothing connects to those servers.
func TestValidateValid(t *testing.T) {
	addr := listenNoDial(t)
	file := writeFile(t, "ok.json", `{
	  "backends": {"shared": {"module": "fxelection.backends.redis", "addr": "`+addr+`", "password": "s3cretpw"}},
	  "elections": [
	    {"name": "a", "backend": "shared"},
	    {"name": "b", "backend": "shared"},
	    {"name": "c", "backend": {"module": "fxelection.backends.postgres", "dsn": "postgres://app:s3cretpw@`+addr+`/db"}},
	    {"name": "d", "backend": {"module": "fxelection.backends.memory"}}
	  ]}`)
	code, out, errOut := runValidateCmd("--config", file)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	want := file + ": valid: 4 elections, 3 backend modules, 0 extensions"
	if !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 || strings.Contains(out, "s3cretpw") {
		t.Fatalf("stdout %q, want one line starting %q", out, want)
	}
	// YAML too, by the file name.
	yml := writeFile(t, "ok.yaml", "elections:\n  - name: a\n    backend: {module: fxelection.backends.redis, addr: \""+addr+"\"}\n")
	if code, out, errOut := runValidateCmd("--config", yml); code != 0 || !strings.Contains(out, "valid: 1 election, 1 backend module") {
		t.Fatalf("yaml: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestValidateInvalid: every problem of an invalid document on its own
// line, with the file and the JSON path, exit 2, nothing on stdout, no
// secret echoed, nothing dialled.
func TestValidateInvalid(t *testing.T) {
	const secret = "s3cretpw"
	addr := listenNoDial(t)
	for _, tt := range []struct {
		name, content string
		want          []string
	}{
		{"decoding", `{"elections": [
		    {"name": "a", "lease_duration": "fifteen", "backend": {"module": "fxelection.backends.redis", "addr": "` + addr + `", "pasword": "` + secret + `"}},
		    {"name": "b", "backend": {"module": "fxelection.backends.etcd"}},
		    {"name": "c", "retry_period": 3, "backend": {"module": "fxelection.backends.memory"}}]}`,
			[]string{"elections[0].lease_duration: invalid value", "elections[0].backend.pasword: unknown key",
				"elections[1].backend.module: unknown module", "elections[2].retry_period: wrong type"}},
		{"validation", `{"backends": {"spare": {"module": "fxelection.backends.memory"}},
		  "elections": [
		    {"name": "a", "lease_duration": "1s", "renew_deadline": "2s", "backend": {"module": "fxelection.backends.redis", "addr": "` + addr + `", "password": "` + secret + `"}},
		    {"name": "b", "backend": "missing"},
		    {"name": "b", "fx_name": "a", "backend": {"module": "fxelection.backends.memory"}}]}`,
			[]string{"elections[0].renew_deadline", "elections[1].backend: invalid value", "elections[2].fx_name: invalid value", "backends.spare: invalid value"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "bad.json", tt.content)
			code, out, errOut := runValidateCmd("--config", file)
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if strings.Contains(errOut, secret) {
				t.Fatalf("stderr echoes the secret: %q", errOut)
			}
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("%d lines, want %d (one per problem):\n%s", len(lines), len(tt.want), errOut)
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, "example-app: "+file+": ") || !printable(l) {
					t.Errorf("line %q does not name the file", l)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestValidateUnreadable: a missing file, a directory or a file too large
// to be a document exit 2 with one line naming --config.
func TestValidateUnreadable(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), 4<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.json"), dir, big} {
		code, out, errOut := runValidateCmd("--config", path)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "example-app: --config: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line naming --config", path, code, out, errOut)
		}
	}
}

// TestValidateUsage: validate needs --config and takes nothing else from
// the command line; FXELECTION_* variables meant for a run do not count,
// and FXELECTION_CONFIG names the file. Help lists the command.
func TestValidateUsage(t *testing.T) {
	file := writeFile(t, "ok.json", `{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.memory"}}]}`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "--config is required for validate"},
		{[]string{"--config", file, "--backend", "redis"}, "validate takes only --config (got --backend)"},
		{[]string{"--config", file, "extra"}, "unexpected argument"},
	} {
		code, _, errOut := runValidateCmd(tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	env := map[string]string{"FXELECTION_CONFIG": file, "FXELECTION_REDIS_ADDR": "127.0.0.1:1", "FXELECTION_LEASE": "20s"}
	var out, errOut bytes.Buffer
	if code := run([]string{"validate"}, &out, &errOut, func(k string) string { return env[k] }); code != 0 || !strings.Contains(out.String(), "valid: 1 election") {
		t.Errorf("from the environment: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"--help"}, &out, &errOut, func(string) string { return "" }); code != 0 || !strings.Contains(out.String(), "example-app validate --config FILE") {
		t.Errorf("help does not list validate:\n%s", out.String())
	}
}
