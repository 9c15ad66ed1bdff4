package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is the example-app built once for tests that run processes.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "example-app-test-*")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "example-app")
	if out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("build example-app: " + err.Error() + "\n" + string(out))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

func TestBadInputExitsTwoNamingTheFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		flag string
	}{
		{"unknown backend", []string{"--backend", "etcd"}, nil, "--backend"},
		{"missing redis address", []string{"--backend", "redis"}, nil, "--redis-addr"},
		{"missing postgres dsn", []string{"--backend", "postgres"}, nil, "--postgres-dsn"},
		{"missing blob connection string", []string{"--backend", "blob", "--blob-container", "c", "--lease", "20s"}, nil, "--blob-connection-string"},
		{"blob lease out of range", []string{"--backend", "blob", "--blob-container", "c", "--blob-connection-string", "x", "--lease", "70s", "--renew-deadline", "50s"}, nil, "--lease (1m10s) must be between 15s and 60s"},
		{"malformed backend setting", []string{"--backend", "blob", "--blob-container", "c", "--blob-connection-string", "x"}, nil, `--backend blob: setting "connection_string"`},
		{"missing s3 endpoint", []string{"--backend", "s3", "--s3-bucket", "b"}, nil, "--s3-endpoint"},
		{"missing s3 bucket", []string{"--backend", "s3", "--s3-endpoint", "127.0.0.1:9000"}, nil, "--s3-bucket"},
		{"deadline not shorter than lease", []string{"--backend", "memory", "--lease", "5s", "--renew-deadline", "5s"}, nil, "--renew-deadline (5s) must be shorter than --lease (5s)"},
		{"retry too long", []string{"--backend", "memory", "--retry", "9s"}, nil, "--retry"},
		{"malformed duration", []string{"--lease", "fifteen"}, nil, "--lease"},
		{"malformed env duration", nil, map[string]string{"FXELECTION_RETRY": "2x"}, "FXELECTION_RETRY (--retry)"},
		{"unknown flag", []string{"--nope"}, nil, "-nope"},
		{"bad log format", []string{"--log-format", "xml"}, nil, "--log-format"},
		{"empty election", []string{"--backend", "memory", "--election", ""}, nil, "--election is required"},
		{"status without backend", []string{"status"}, nil, "--backend"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, tt.args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			for k, v := range tt.env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want code 2; stderr %q", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.flag) {
				t.Fatalf("stderr %q: want one line naming %q", stderr.String(), tt.flag)
			}
			if strings.Contains(stderr.String(), "goroutine") || stdout.Len() != 0 {
				t.Fatalf("unexpected output: stdout %q stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	env := map[string]string{"FXELECTION_BACKEND": "redis", "FXELECTION_REDIS_ADDR": "127.0.0.1:1", "FXELECTION_LEASE": "20s", "FXELECTION_RENEW_DEADLINE": "12s"}
	o, err := parseArgs([]string{"--lease", "30s"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.backend != "redis" || o.redisAddr != "127.0.0.1:1" || o.lease != 30*time.Second || o.renewDeadline != 12*time.Second {
		t.Fatalf("options %+v: flags must win over the environment, which fills the rest", o)
	}
	if o.id == "" {
		t.Fatal("no default identity")
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut, func(string) string { return "" }); code != 0 || !strings.Contains(out.String(), "--redis-addr") && !strings.Contains(out.String(), "-redis-addr") {
		t.Fatalf("help: code %d, %q", code, out.String())
	}
}

func TestDemoShowsFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--demo-duration", "15s").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	acquired := regexp.MustCompile(`msg="leadership acquired" election=demo identity=(\S+) term=(\d+)`).FindAllStringSubmatch(string(out), -1)
	if len(acquired) < 2 {
		t.Fatalf("demo showed %d leaderships, want a hand-over at least:\n%s", len(acquired), out)
	}
	if acquired[0][1] == acquired[1][1] || acquired[0][2] >= acquired[1][2] {
		t.Fatalf("second leadership %v does not follow the first %v with another leader and a higher term", acquired[1], acquired[0])
	}
	for _, want := range []string{"leader work", "stopping the leader gracefully", "vanishes without releasing", `reason="renew deadline exceeded"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
