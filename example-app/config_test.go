package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// writeFile writes content to name in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// leaders polls /leader until every election in want leads (the response
// is an array, one object per election), and returns them by election.
func leaders(t *testing.T, addr string, want ...string) map[string]leaderJSON {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]leaderJSON{}
		if code, body := get(t, "http://"+addr+"/leader"); code == 200 {
			var list []leaderJSON
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatalf("/leader: %v: %q", err, body)
			}
			for _, l := range list {
				if l.Leading {
					got[l.Election] = l
				}
			}
			if len(list) == len(want) && len(got) == len(want) {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every election of %v led within 30s (leading: %v)", want, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopWithSIGTERM sends SIGTERM to process i and waits for exit 0.
func stopWithSIGTERM(t *testing.T, p *procs, i int) {
	t.Helper()
	if err := p.cmds[i].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.eof[i]:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
	if err := p.cmds[i].Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want 0", err)
	}
}

// TestConfigFileRunsEveryElection runs three elections from one JSON file in
// one process (two on a shared in-memory backend, one on its own): each
// gets a leader with the log contract and leader work, /leader, /healthz,
// /readyz and /metrics answer for each, and SIGTERM stops each gracefully.
func TestConfigFileRunsEveryElection(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	const timing = `"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms"`
	file := writeFile(t, "elections.json", `{
  "backends": {"shared": {"module": "fxelection.backends.memory"}},
  "elections": [
    {"name": "billing", "identity": "node-a", "backend": "shared", `+timing+`},
    {"name": "reports", "identity": "node-a", "backend": "shared", `+timing+`},
    {"name": "mail jobs", "fx_name": "mail", "identity": "node-a", "metadata": {"zone": "a"}, `+timing+`,
     "backend": {"module": "fxelection.backends.memory"}}
  ]
}`)
	addr := freeAddr(t)
	p := &procs{t: t, noID: true}
	i := p.start("--config", file, "--http", addr, "--log-format", "json", "--work-interval", "100ms")

	names := []string{"billing", "reports", "mail jobs"}
	got := leaders(t, addr, names...)
	for _, n := range names {
		if l := got[n]; l.Leader != "node-a" || l.Identity != "node-a" || l.Term == 0 || l.Backend != "memory" {
			t.Errorf("/leader for %q: %+v", n, l)
		}
	}
	if got["mail jobs"].Metadata["zone"] != "a" {
		t.Errorf("metadata of mail jobs: %v", got["mail jobs"].Metadata)
	}
	code, body := get(t, "http://"+addr+"/leader?election=reports")
	var one leaderJSON
	if code != 200 || json.Unmarshal([]byte(body), &one) != nil || one.Election != "reports" || !one.Leading {
		t.Fatalf("/leader?election=reports: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+addr+"/leader?election=nope"); code != 404 {
		t.Fatalf("/leader?election=nope: %d, want 404", code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := get(t, "http://"+addr+path)
		for _, n := range names {
			if code != 200 || !strings.Contains(body, fmt.Sprintf(`"election":%q`, n)) {
				t.Fatalf("%s: %d %s (want election %q)", path, code, body, n)
			}
		}
	}
	_, metrics := get(t, "http://"+addr+"/metrics")
	for _, n := range names {
		if want := fmt.Sprintf(`fxelection_is_leader{election=%q,identity="node-a"} 1`, n); !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, n := range names {
		p.waitFor(0, 10*time.Second, func(l logLine) bool {
			return l.Msg == "leadership acquired" && l.Election == n && l.Identity == "node-a"
		})
		p.waitFor(0, 10*time.Second, func(l logLine) bool { return l.Msg == "leader work" && l.Election == n })
	}

	stopWithSIGTERM(t, p, i)
	for _, n := range names {
		p.waitFor(0, time.Second, func(l logLine) bool {
			return l.Msg == "leadership lost" && l.Election == n && l.Reason == "stopped"
		})
	}
}

// TestConfigFileOnRedis runs, from one YAML file whose Redis address is a
// placeholder, two elections on a shared real Redis and one in memory:
// each leads; "status" reads the Redis ones from the store; SIGTERM
// releases the Redis leases (status then finds no leader at once).
func TestConfigFileOnRedis(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	file := writeFile(t, "elections.yaml", `
backends:
  cache:
    module: fxelection.backends.redis
    addr: "{env.FXE_TEST_REDIS_ADDR}"
elections:
  - name: orders
    identity: node-a
    backend: cache
    lease_duration: 30s
    renew_deadline: 20s
    retry_period: 500ms
  - name: invoices
    identity: node-a
    backend: cache
    lease_duration: 30s
    renew_deadline: 20s
    retry_period: 500ms
  - name: local
    identity: node-a
    backend:
      module: fxelection.backends.memory
`)
	addr := freeAddr(t)
	p := &procs{t: t, noID: true, env: []string{"FXE_TEST_REDIS_ADDR=" + srv.Addr()}}
	i := p.start("--config", file, "--http", addr, "--log-format", "json")
	got := leaders(t, addr, "orders", "invoices", "local")
	if got["orders"].Backend != "redis" || got["local"].Backend != "memory" {
		t.Fatalf("/leader: %+v", got)
	}
	// The leases are long (30s): if SIGTERM did not release them, status
	// would still see them.
	status := func(election string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, binary, "status", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", election).CombinedOutput()
		if err != nil {
			t.Fatalf("status %s: %v\n%s", election, err, out)
		}
		return string(out)
	}
	for _, n := range []string{"orders", "invoices"} {
		if out := status(n); !strings.Contains(out, "leader:   node-a") || !strings.Contains(out, fmt.Sprintf("term:     %d", got[n].Term)) {
			t.Fatalf("status %s:\n%s", n, out)
		}
	}
	stopWithSIGTERM(t, p, i)
	for _, n := range []string{"orders", "invoices", "local"} {
		p.waitFor(0, time.Second, func(l logLine) bool {
			return l.Msg == "leadership lost" && l.Election == n && l.Reason == "stopped"
		})
	}
	for _, n := range []string{"orders", "invoices"} {
		if out := status(n); !strings.Contains(out, fmt.Sprintf("election %q has no leader", n)) {
			t.Fatalf("status %s after SIGTERM (lease not released?):\n%s", n, out)
		}
	}
}

// TestConfigErrorsExitTwo: a bad --config file (or --config with an
// election flag) exits 2 before anything runs, each problem on its own
// line naming the file and the JSON path (or the flag), no secret echoed.
func TestConfigErrorsExitTwo(t *testing.T) {
	const secret = "s3cretpw"
	redis := func(settings string) string {
		return `{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.redis", ` + settings + `}}]}`
	}
	tests := []struct {
		name, file, content string
		args                []string
		want                []string
	}{
		{"misspelt setting", "c.json", redis(`"addr": "127.0.0.1:1", "pasword": "` + secret + `"`), nil,
			[]string{"elections[0].backend.pasword: unknown key"}},
		{"missing required setting", "c.json", redis(`"password": "` + secret + `"`), nil,
			[]string{"elections[0].backend.addr: required"}},
		{"url with a password", "c.json", redis(`"addr": "redis://app:` + secret + `@127.0.0.1:6379"`), nil,
			[]string{"elections[0].backend"}},
		{"two problems", "c.json", `{"elections": [{"name": "a", "lease_duration": "fifteen", "backend": {"module": "fxelection.backends.memory"}},
			{"name": "b", "backend": {"module": "fxelection.backends.etcd"}}]}`, nil,
			[]string{"elections[0].lease_duration: invalid value", "elections[1].backend.module: unknown module"}},
		{"unset variable", "c.json", redis(`"addr": "{env.FXE_TEST_UNSET_VARIABLE}", "password": "` + secret + `"`), nil,
			[]string{"elections[0].backend.addr", "FXE_TEST_UNSET_VARIABLE"}},
		{"no elections", "c.json", `{}`, nil, []string{"elections: required"}},
		{"yaml syntax", "c.yaml", "elections: [\n  - name: a\n    backend: {module: x\n", nil, []string{"c.yaml", "syntax error"}},
		{"yaml wrong type", "c.yml", "elections:\n  - name: a\n    lease_duration: 15\n    backend: {module: fxelection.backends.memory}\n", nil,
			[]string{"elections[0].lease_duration: wrong type"}},
		{"no such file", "", "", []string{"--config", "/nonexistent/fxelection.json"}, []string{"--config", "/nonexistent/fxelection.json"}},
		{"election flag", "c.json", `{}`, []string{"--backend", "redis"}, []string{"--backend conflicts with --config"}},
		{"secret flag", "c.json", `{}`, []string{"--redis-password", secret}, []string{"--redis-password conflicts with --config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeFile(t, tt.file, tt.content)}, args...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want code 2; stderr %q", err, stderr.String())
			}
			if stdout.Len() != 0 || strings.Contains(stderr.String(), secret) || strings.Contains(stderr.String(), "goroutine") {
				t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			for _, l := range lines {
				if !strings.HasPrefix(l, "example-app: ") || !printable(l) {
					t.Errorf("line %q", l)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
			if tt.file != "" && !strings.Contains(tt.want[0], "--") && !strings.Contains(lines[0], tt.file) {
				t.Errorf("stderr %q does not name the file", stderr.String())
			}
		})
	}
}

// TestShippedConfigs runs the example files in examples/configs that need
// no cloud service (memory, and redis on a test server): every election
// they name leads in one process, and SIGTERM stops it cleanly.
func TestShippedConfigs(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	for _, tt := range []struct {
		file      string
		elections []string
		env       func(t *testing.T) []string
	}{
		{"memory.json", []string{"billing", "reports"}, func(*testing.T) []string { return nil }},
		{"redis.json", []string{"billing", "reports"}, func(t *testing.T) []string {
			srv := testserver.NewRedis(t, testserver.RedisOptions{})
			return []string{"REDIS_ADDR=" + srv.Addr(), "REDIS_PASSWORD="}
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			addr := freeAddr(t)
			p := &procs{t: t, noID: true, env: tt.env(t)}
			i := p.start("--config", filepath.Join("..", "examples", "configs", tt.file), "--http", addr, "--log-format", "json")
			leaders(t, addr, tt.elections...)
			stopWithSIGTERM(t, p, i)
			for _, n := range tt.elections {
				p.waitFor(0, time.Second, func(l logLine) bool {
					return l.Msg == "leadership lost" && l.Election == n && l.Reason == "stopped"
				})
			}
		})
	}
}
