package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
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
	h := adminHandler(rt, adminPolicy{localOnly: true}, slog.New(slog.DiscardHandler))
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
	adminHandler(rt, adminPolicy{}, slog.New(slog.DiscardHandler)).ServeHTTP(w, httptest.NewRequest("GET", "http://"+host+"/config", nil))
	return w.Code
}

// TestAdminFlags: --admin is a unix socket by default; on TCP it needs a
// token (FXELECTION_ADMIN_TOKEN or --admin-token-file, never the command
// line) and is loopback only unless --admin-remote; off turns it off, it
// works only with --config (or run), and reload needs an address.
func TestAdminFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for no error; else a part of the usage error
	}{
		{[]string{"run", "--config", "f.json"}, ""},
		{[]string{"run", "--config", "f.json", "--admin", "off"}, ""},
		{[]string{"--config", "f.json", "--admin", "localhost:1", "--admin-token-file", "t"}, ""},
		{[]string{"--config", "f.json", "--admin", "[::1]:1", "--admin-token-file", "t"}, ""},
		{[]string{"--config", "f.json", "--admin", "0.0.0.0:2019", "--admin-token-file", "t"}, "--admin: not a loopback address"},
		{[]string{"--config", "f.json", "--admin", "0.0.0.0:2019", "--admin-remote", "--admin-token-file", "t"}, ""},
		{[]string{"--config", "f.json", "--admin", "unix//run/app/admin.sock", "--admin-socket-mode", "0660"}, ""},
		{[]string{"--config", "f.json", "--admin", "unix/"}, "--admin unix/: the socket's path is missing"},
		{[]string{"--config", "f.json", "--admin", "unix//" + strings.Repeat("a", 107)}, "--admin unix/: the socket's path is longer than 107 bytes"},
		{[]string{"--config", "f.json", "--admin-socket-mode", "0666"}, "--admin-socket-mode (0666) must grant nothing to others"},
		{[]string{"--config", "f.json", "--admin-socket-mode", "0400"}, "--admin-socket-mode (0400) must let the owner read and write"},
		{[]string{"--config", "f.json", "--admin-socket-mode", "9"}, `--admin-socket-mode ("9") is not permission bits in octal`},
		{[]string{"--config", "f.json", "--admin", "127.0.0.1:1", "--admin-socket-mode", "0600", "--admin-token-file", "t"}, "--admin-socket-mode works only with a unix socket --admin"},
		{[]string{"--config", "f.json", "--admin-remote"}, "--admin-remote works only with a TCP --admin"},
		{[]string{"--config", "f.json", "--admin-token", "0123456789abcdef"}, "--admin-token is not taken on the command line, which every user can read: set FXELECTION_ADMIN_TOKEN"},
		{[]string{"--config", "f.json", "--admin-allow-placeholders"}, ""},
		{[]string{"run"}, "--config is required for run"},
		{[]string{"run", "--config", "f.json", "--lease", "5s"}, "--lease conflicts with --config"},
		{[]string{"--backend", "memory", "--admin", "127.0.0.1:1"}, "--admin works only with --config"},
		{[]string{"reload", "--config", "f.json"}, ""},
		{[]string{"reload", "--config", "f.json", "--admin", "unix//run/app/admin.sock"}, ""},
		{[]string{"reload", "--config", "f.json", "--admin", "127.0.0.1:1"}, "--admin: a TCP admin endpoint needs a credential"},
		{[]string{"reload", "--config", "f.json", "--admin", "10.0.0.1:1", "--admin-token-file", "t"}, ""},
		{[]string{"reload", "--config", "f.json", "--admin", "off"}, "reload needs the admin endpoint's address"},
		{[]string{"reload", "--admin", "127.0.0.1:1"}, "--config is required for reload"},
		{[]string{"reload", "--config", "f.json", "--http", "127.0.0.1:1"}, "reload takes only --config, --admin and --admin-token-file (got --http)"},
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

// resignDoc has two candidates, n1 and n2, of election e on one shared
// in-memory store, and one candidate of election g that does not campaign
// again once it has stopped leading.
const resignDoc = `{"backends": {"m": {"module": "fxelection.backends.memory"}}, "elections": [
	{"name": "e", "fx_name": "e1", "identity": "n1", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "200ms", "backend": "m"},
	{"name": "e", "fx_name": "e2", "identity": "n2", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "200ms", "backend": "m"},
	{"name": "g", "identity": "solo", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "200ms", "no_recampaign": true,
		"backend": {"module": "fxelection.backends.memory"}}]}`

// TestAdminResign checks POST /resign in process: a hand-over from the
// leader of e to the other candidate, a plain resign, "not leading", and
// the refusals (400, 403, 404, 405), none of which changes the leader.
func TestAdminResign(t *testing.T) {
	rt := config.NewRuntime(config.RuntimeOptions{})
	defer rt.Close(context.Background())
	doc, err := config.Parse([]byte(resignDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Apply(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	h := adminHandler(rt, adminPolicy{localOnly: true}, slog.New(slog.DiscardHandler))
	do := func(method, host, target string, header ...string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, "http://"+host+target, nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// leaderOf waits (generously) for exactly one candidate of name to
	// lead and returns it.
	leaderOf := func(name string) *fxelection.Elector {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			var leaders []*fxelection.Elector
			for _, e := range rt.Electors() {
				if e.Status().Election == name && e.IsLeader() {
					leaders = append(leaders, e)
				}
			}
			if len(leaders) == 1 {
				return leaders[0]
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no single leader of %s within 30s", name)
		return nil
	}
	leader := leaderOf("e")
	leaderID := leader.Status().Identity
	followerID := map[string]string{"n1": "n2", "n2": "n1"}[leaderID]

	refusals := []struct {
		method, host, target string
		header               []string
		code                 int
		want                 string
	}{
		{"POST", "127.0.0.1:2019", "/resign", nil, http.StatusBadRequest, "election: required"},
		{"POST", "127.0.0.1:2019", "/resign?to=n2", nil, http.StatusBadRequest, "election: required"},
		{"POST", "127.0.0.1:2019", "/resign?election=nope&to=n2", nil, http.StatusNotFound, "no such election"},
		{"POST", "127.0.0.1:2019", "/resign?election=e&to=" + leaderID, nil, http.StatusBadRequest, "to: bad successor: it is this candidate"},
		{"POST", "127.0.0.1:2019", "/resign?election=e&to=evil%1b%5b2J", nil, http.StatusBadRequest, "to: bad successor: must be printable (byte 4 is a control character)"},
		{"GET", "127.0.0.1:2019", "/resign?election=e&to=" + followerID, nil, http.StatusMethodNotAllowed, ""},
		{"POST", "attacker.example:2019", "/resign?election=e&to=" + followerID, nil, http.StatusForbidden, ""},
		{"POST", "127.0.0.1:2019", "/resign?election=e&to=" + followerID, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, ""},
		{"POST", "127.0.0.1:2019", "/resign?election=e&to=" + followerID, []string{"Origin", "https://attacker.example"}, http.StatusForbidden, ""},
	}
	for _, tt := range refusals {
		w := do(tt.method, tt.host, tt.target, tt.header...)
		if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.want) || strings.Contains(w.Body.String(), "evil") {
			t.Errorf("%s %s (Host %s, %q): %d %q, want %d with %q", tt.method, tt.target, tt.host, tt.header, w.Code, w.Body, tt.code, tt.want)
		}
	}
	if !leader.IsLeader() {
		t.Fatal("a refused request made the leader resign")
	}

	// The hand-over, as a form body.
	r := httptest.NewRequest("POST", "http://127.0.0.1:2019/resign", strings.NewReader("election=e&to="+followerID))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || w.Body.String() != "handed over to \""+followerID+"\"\n" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("POST /resign election=e&to=%s: %d %q %q", followerID, w.Code, w.Body, w.Header().Get("Content-Type"))
	}
	if next := leaderOf("e"); next.Status().Identity != followerID {
		t.Fatalf("after the hand-over to %s, %s leads", followerID, next.Status().Identity)
	}

	// A plain resign: the new leader resigns (either candidate may lead
	// next).
	if w := do("POST", "localhost:2019", "/resign?election=e"); w.Code != 200 || w.Body.String() != "resigned\n" {
		t.Errorf("POST /resign?election=e: %d %q", w.Code, w.Body)
	}

	// A single candidate hands over to one that never comes: it stops
	// leading (and, with no_recampaign, stays a follower), and then has
	// nothing to do.
	solo := leaderOf("g")
	if w := do("POST", "[::1]:2019", "/resign?election=g&to=absent"); w.Code != 200 || w.Body.String() != "handed over to \"absent\"\n" {
		t.Errorf("POST /resign?election=g&to=absent: %d %q", w.Code, w.Body)
	}
	if solo.IsLeader() {
		t.Error("g still leads after handing over")
	}
	if w := do("POST", "127.0.0.1", "/resign?election=g&to=absent"); w.Code != 200 || w.Body.String() != "not leading: nothing to do\n" {
		t.Errorf("POST /resign?election=g to a follower: %d %q", w.Code, w.Body)
	}
}
