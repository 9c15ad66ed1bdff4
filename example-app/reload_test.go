package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// reloadCmd runs "example-app reload" with args and returns its exit code,
// stdout and stderr.
func reloadCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return reloadEnv(t, nil, args...)
}

// reloadEnv is reloadCmd with env added to the command's environment.
func reloadEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"reload"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// TestReloadKeepsUnchangedElections runs "example-app run" with three
// elections on one private Redis, then reloads a document that changes
// one, removes one and adds one: the unchanged election keeps its term and
// never logs a loss, the changed one restarts with a higher term, the
// removed one releases its lease, the added one leads. A broken document
// then leaves all running and reload exits 2 naming the path; an
// unreachable endpoint exits 1.
func TestReloadKeepsUnchangedElections(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	const timing = `"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms"`
	redis := `{"module": "fxelection.backends.redis", "addr": "` + srv.Addr() + `"}`
	election := func(name, extra, backend string) string {
		return `{"name": "` + name + `", "identity": "node-a", ` + timing + extra + `, "backend": ` + backend + `}`
	}
	doc := func(elections ...string) string {
		return `{"backends": {"shared": ` + redis + `}, "elections": [` + strings.Join(elections, ",\n") + `]}`
	}
	keep := election("keep", "", `"shared"`)
	file := writeFile(t, "elections.json", doc(keep, election("change", "", `"shared"`), election("remove", "", redis)))
	addr, admin := freeAddr(t), "unix/"+filepath.Join(t.TempDir(), "admin.sock")
	p := &procs{t: t, noID: true}
	i := p.start("run", "--config", file, "--http", addr, "--admin", admin, "--log-format", "json", "--work-interval", "100ms")
	before := leaders(t, addr, "keep", "change", "remove")

	// Change one (its metadata), remove one, add one.
	if err := os.WriteFile(file, []byte(doc(
		election("added", "", redis),
		keep,
		election("change", `, "metadata": {"v": "2"}`, `"shared"`),
	)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := reloadCmd(t, "--config", file, "--admin", admin); code != 0 || !strings.Contains(out, "loaded: 3 elections running") {
		t.Fatalf("reload: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	after := leaders(t, addr, "added", "keep", "change")
	if after["keep"].Term != before["keep"].Term {
		t.Errorf("unchanged election: term %d, was %d", after["keep"].Term, before["keep"].Term)
	}
	if after["change"].Term <= before["change"].Term || after["change"].Metadata["v"] != "2" {
		t.Errorf("changed election: %+v, was term %d", after["change"], before["change"].Term)
	}
	out, err := exec.Command(binary, "status", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "remove").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `has no leader`) {
		t.Errorf("removed election's lease not released: %v\n%s", err, out)
	}
	p.waitFor(0, 30*time.Second, func(l logLine) bool { return l.Msg == "leader work" && l.Election == "added" })
	for _, name := range []string{"change", "remove"} {
		p.waitFor(0, 30*time.Second, func(l logLine) bool {
			return l.Msg == "leadership lost" && l.Election == name && l.Reason == "stopped"
		})
	}
	// Metrics follow: the added election is measured, the removed one's
	// series are gone.
	if _, m := get(t, "http://"+addr+"/metrics"); !strings.Contains(m, `fxelection_is_leader{election="added",identity="node-a"} 1`) ||
		strings.Contains(m, `election="remove"`) {
		t.Errorf("/metrics after the reload:\n%s", m)
	}
	if code, body := getAdmin(t, admin); code != 200 || !strings.Contains(body, `"added"`) || strings.Contains(body, `"remove"`) {
		t.Errorf("GET /config: %d\n%s", code, body)
	}

	// A broken document: nothing changes, reload names the path.
	if err := os.WriteFile(file, []byte(doc(keep, election("change", `, "lease_duraton": "5s"`, `"shared"`))), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := reloadCmd(t, "--config", file, "--admin", admin)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "elections[1].lease_duraton: unknown key") {
		t.Errorf("reload of a broken document: exit %d, stdout %q, stderr %q; want 2 naming elections[1].lease_duraton", code, stdout, stderr)
	}
	// A document valid where reload runs but not in the server (a
	// variable only the client has): the server's problems, exit 2.
	if err := os.WriteFile(file, []byte(doc(keep, election("change", `, "metadata": {"v": "{env.FXE_TEST_CLIENT_ONLY}"}`, `"shared"`))), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = reloadEnv(t, []string{"FXE_TEST_CLIENT_ONLY=x"}, "--config", file, "--admin", admin)
	if code != 2 || !strings.HasPrefix(stderr, "example-app: "+file+": elections[1].metadata.v: placeholder: {env.NAME}: not allowed here") {
		t.Errorf("reload of a document the server rejects: exit %d, stderr %q; want 2 naming elections[1].metadata.v", code, stderr)
	}
	// A bad document posted straight to the endpoint: 400, one problem
	// per line, and nothing changes.
	client, base := adminClient(admin)
	resp, err := client.Post(base+"/load", "application/json", strings.NewReader(doc(keep, `{"name": "x", "lease_duration": "1y", "colour": "crimson", "backend": "shared"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(body.String(), "elections[1].lease_duration: invalid value") ||
		!strings.Contains(body.String(), "\nelections[1].colour: unknown key") || strings.Contains(body.String(), "1y") || strings.Contains(body.String(), "crimson") {
		t.Errorf("POST /load of a bad document: %d\n%s", resp.StatusCode, body.String())
	}
	still := leaders(t, addr, "added", "keep", "change")
	for name, l := range after {
		if still[name].Term != l.Term {
			t.Errorf("%s: term %d after bad loads, was %d", name, still[name].Term, l.Term)
		}
	}

	// Nothing listening: exit 1.
	nowhere := "unix/" + filepath.Join(t.TempDir(), "none.sock")
	if code, _, stderr := reloadCmd(t, "--config", file, "--admin", nowhere); code != 2 {
		// The file is broken here (the variable is unset): checked
		// locally first, exit 2.
		t.Errorf("reload of a broken file to nowhere: exit %d, stderr %q; want 2", code, stderr)
	}
	good := writeFile(t, "good.json", doc(keep))
	if code, _, stderr := reloadCmd(t, "--config", good, "--admin", nowhere); code != 1 || !strings.Contains(stderr, "admin endpoint unreachable") {
		t.Errorf("reload to nowhere: exit %d, stderr %q; want 1", code, stderr)
	}

	mark := len(p.snapshot())
	stopWithSIGTERM(t, p, i)
	for n, l := range p.snapshot() {
		if l.Msg == "leadership lost" && l.Election == "keep" && n < mark {
			t.Errorf("the unchanged election logged a loss before the process stopped: %+v", l)
		}
	}
	out, err = exec.Command(binary, "status", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "keep").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `has no leader`) {
		t.Errorf("keep's lease not released on SIGTERM: %v\n%s", err, out)
	}
}

func getAdmin(t *testing.T, admin string) (int, string) {
	t.Helper()
	return adminGet(t, admin, "")
}
