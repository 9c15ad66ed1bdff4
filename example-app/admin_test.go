package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
)

const adminDoc = `{"elections": [{"name": "a", "identity": "n", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms",
	"backend": {"module": "fxelection.backends.memory"}}]}`

// TestAdminHandler checks the admin API in process, on the in-memory
// backend: GET /config, the Host and Content-Type rules, the body bound, a
// bad document (400, paths, nothing changed) and a good one (200).
func TestAdminHandler(t *testing.T) {
	rt := config.NewRuntime(config.RuntimeOptions{})
	defer rt.Close(context.Background())
	doc, err := config.Parse([]byte(adminDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Apply(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	h := adminHandler(rt, true, slog.New(slog.DiscardHandler))
	do := func(method, host, path, ctype, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://"+host+path, strings.NewReader(body))
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("GET", "127.0.0.1:2019", "/config", "", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"name": "a"`) {
		t.Errorf("GET /config: %d %s", w.Code, w.Body)
	}
	for _, host := range []string{"attacker.example:2019", "10.0.0.1:2019", "attacker.example"} {
		if w := do("GET", host, "/config", "", ""); w.Code != http.StatusForbidden {
			t.Errorf("GET /config with Host %s: %d, want 403", host, w.Code)
		}
	}
	for _, host := range []string{"localhost:2019", "[::1]:2019", "127.0.0.1"} {
		if w := do("GET", host, "/config", "", ""); w.Code != 200 {
			t.Errorf("GET /config with Host %s: %d, want 200", host, w.Code)
		}
	}
	if w := do("POST", "127.0.0.1", "/load", "text/plain", adminDoc); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("POST /load as text/plain: %d, want 415", w.Code)
	}
	if w := do("GET", "127.0.0.1", "/load", "", ""); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /load: %d, want 405", w.Code)
	}
	big := `{"elections": [], "x": "` + strings.Repeat("a", config.MaxDocumentBytes) + `"}`
	if w := do("POST", "127.0.0.1", "/load", "application/json", big); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /load of %d bytes: %d, want 413", len(big), w.Code)
	}
	before := rt.Electors()[0]
	bad := `{"elections": [{"name": "a", "lease_duration": "forever", "password": "hunter2hunter2", "backend": {"module": "fxelection.backends.memory"}}]}`
	w := do("POST", "127.0.0.1", "/load", "application/json", bad)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "elections[0].lease_duration: invalid value") ||
		!strings.Contains(w.Body.String(), "\nelections[0].password: unknown key") || strings.Contains(w.Body.String(), "hunter2") ||
		strings.Contains(w.Body.String(), "forever") {
		t.Errorf("POST /load of a bad document: %d\n%s", w.Code, w.Body)
	}
	if rt.Electors()[0] != before {
		t.Error("a bad document changed the running election")
	}
	yaml := "elections:\n  - name: a\n    identity: n\n    lease_duration: 3s\n    renew_deadline: 2s\n    retry_period: 500ms\n    backend: {module: fxelection.backends.memory}\n  - name: b\n    backend: {module: fxelection.backends.memory}\n"
	if w := do("POST", "127.0.0.1", "/load", "application/yaml", yaml); w.Code != 200 || !strings.Contains(w.Body.String(), "loaded: 2 elections running") {
		t.Errorf("POST /load of a good YAML document: %d %s", w.Code, w.Body)
	}
	if es := rt.Electors(); len(es) != 2 || es[0] != before {
		t.Errorf("after the load: %d electors, first kept %v", len(es), es[0] == before)
	}
	// With --admin-remote, any Host.
	if w := adminHandlerDo(rt, "attacker.example"); w != 200 {
		t.Errorf("remote-allowed GET /config: %d", w)
	}
}

func adminHandlerDo(rt *config.Runtime, host string) int {
	w := httptest.NewRecorder()
	adminHandler(rt, false, slog.New(slog.DiscardHandler)).ServeHTTP(w, httptest.NewRequest("GET", "http://"+host+"/config", nil))
	return w.Code
}

// TestAdminFlags: --admin is loopback only unless --admin-remote, off
// turns it off, it works only with --config (or run), and reload needs an
// address.
func TestAdminFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for no error; else a part of the usage error
	}{
		{[]string{"run", "--config", "f.json"}, ""},
		{[]string{"run", "--config", "f.json", "--admin", "off"}, ""},
		{[]string{"--config", "f.json", "--admin", "localhost:1"}, ""},
		{[]string{"--config", "f.json", "--admin", "[::1]:1"}, ""},
		{[]string{"--config", "f.json", "--admin", "0.0.0.0:2019"}, "--admin: not a loopback address"},
		{[]string{"--config", "f.json", "--admin", "0.0.0.0:2019", "--admin-remote"}, ""},
		{[]string{"run"}, "--config is required for run"},
		{[]string{"run", "--config", "f.json", "--lease", "5s"}, "--lease conflicts with --config"},
		{[]string{"--backend", "memory", "--admin", "127.0.0.1:1"}, "--admin works only with --config"},
		{[]string{"reload", "--config", "f.json"}, ""},
		{[]string{"reload", "--config", "f.json", "--admin", "off"}, "reload needs the admin endpoint's address"},
		{[]string{"reload", "--admin", "127.0.0.1:1"}, "--config is required for reload"},
		{[]string{"reload", "--config", "f.json", "--http", "127.0.0.1:1"}, "reload takes only --config and --admin (got --http)"},
	}
	for _, tt := range tests {
		o, err := parseArgs(tt.args, noEnv)
		var ue usageError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case tt.want != "" && (!errors.As(err, &ue) || !strings.Contains(ue.msg, tt.want)):
			t.Errorf("%q: %v, want an error with %q", tt.args, err, tt.want)
		case tt.want == "" && tt.args[0] == "run" && !o.run:
			t.Errorf("%q: not run", tt.args)
		}
	}
	// FXELECTION_ADMIN meant for runs with --config does not break the
	// others.
	env := func(k string) string {
		if k == "FXELECTION_ADMIN" {
			return "127.0.0.1:1"
		}
		return ""
	}
	if _, err := parseArgs([]string{"--backend", "memory"}, env); err != nil {
		t.Errorf("--backend with FXELECTION_ADMIN: %v", err)
	}
}
