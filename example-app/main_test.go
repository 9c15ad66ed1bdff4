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

	"github.com/fxelection/fxelection/internal/testtier"
)

// binary is the example-app built once for tests that run processes.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(noReapEnv) != "" {
		noReapMain() // exec's tests run this binary as an init that reaps late…
		return
	}
	if mode := os.Getenv(childModeEnv); mode != "" {
		childMain(mode) // …and as their child
		return
	}
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

// singleDashFlag finds a flag named with one dash ("-redis-tls").
var singleDashFlag = regexp.MustCompile(`(^|[\s(:])-[a-z]`)

func TestBadInputExitsTwoNamingTheFlag(t *testing.T) {
	const absurd = "4611686018427387904ns" // 1<<62 ns
	tests := []struct {
		name string
		args []string
		env  map[string]string
		flag string
		// secret must not appear in the output.
		secret string
	}{
		{"unknown backend", []string{"--backend", "etcd"}, nil, "--backend", ""},
		{"missing redis address", []string{"--backend", "redis"}, nil, "--redis-addr", ""},
		{"missing postgres dsn", []string{"--backend", "postgres"}, nil, "--postgres-dsn", ""},
		{"missing blob connection string", []string{"--backend", "blob", "--blob-container", "c", "--lease", "20s"}, nil, "--blob-connection-string", ""},
		{"blob lease out of range", []string{"--backend", "blob", "--blob-container", "c", "--blob-connection-string", "x", "--lease", "70s", "--renew-deadline", "50s"}, nil, "--lease (1m10s) must be between 15s and 60s", ""},
		{"malformed backend setting", []string{"--backend", "blob", "--blob-container", "c", "--blob-connection-string", "x"}, nil, "--blob-connection-string: invalid connection string", ""},
		{"missing s3 endpoint", []string{"--backend", "s3", "--s3-bucket", "b"}, nil, "--s3-endpoint", ""},
		{"missing s3 bucket", []string{"--backend", "s3", "--s3-endpoint", "127.0.0.1:9000"}, nil, "--s3-bucket", ""},
		{"deadline not shorter than lease", []string{"--backend", "memory", "--lease", "5s", "--renew-deadline", "5s"}, nil, "--renew-deadline: must be shorter than --lease (is 5s, --lease 5s)", ""},
		{"retry too long", []string{"--backend", "memory", "--retry", "9s"}, nil, "--retry", ""},
		{"malformed duration", []string{"--lease", "fifteen"}, nil, "--lease", ""},
		{"malformed env duration", nil, map[string]string{"FXELECTION_RETRY": "2x"}, "--retry from FXELECTION_RETRY", ""},
		{"unknown flag", []string{"--nope"}, nil, "unknown flag --nope", ""},
		{"flag without value", []string{"--lease"}, nil, "--lease needs a value", ""},
		{"bad log format", []string{"--log-format", "xml"}, nil, "--log-format", ""},
		{"empty election", []string{"--backend", "memory", "--election", ""}, nil, "--election: required", ""},
		{"status without backend", []string{"status"}, nil, "--backend", ""},

		// Issue 9, point 10.
		{"retry below the floor", []string{"--backend", "memory", "--retry=1ns"}, nil, "--retry (1ns) must be at least 10ms", ""},
		{"retry below the floor from env", []string{"--backend", "memory"}, map[string]string{"FXELECTION_RETRY": "1ns"}, "--retry from FXELECTION_RETRY (1ns) must be at least 10ms", ""},
		{"work interval below the floor", []string{"--backend", "memory", "--work-interval=1ns"}, nil, "--work-interval (1ns) must be at least 10ms", ""},
		{"zero lease", []string{"--backend", "memory", "--lease=0"}, nil, "--lease (0s) must be positive", ""},
		{"zero retry", []string{"--backend", "memory", "--retry=0"}, nil, "--retry (0s) must be positive", ""},
		{"zero renew deadline", []string{"--backend", "memory", "--renew-deadline=0"}, nil, "--renew-deadline (0s) must be positive", ""},
		{"zero stop timeout", []string{"--backend", "memory", "--stop-timeout=0"}, nil, "--stop-timeout (0s) must be positive", ""},
		{"demo validates its flags", []string{"--lease=-1s", "--election="}, nil, "--lease (-1s) must be positive", ""},
		{"demo validates the election", []string{"--election="}, nil, "--election: required", ""},
		{"demo validates the timing", []string{"--lease=5s", "--renew-deadline=5s"}, nil, "--renew-deadline: must be shorter than --lease (is 5s, --lease 5s)", ""},
		{"negative demo duration", []string{"--demo-duration=-1s"}, nil, "--demo-duration (-1s) must not be negative", ""},
		{"absurd lease", []string{"--backend", "memory", "--lease=" + absurd, "--renew-deadline=" + absurd}, nil, "--lease (1281023h53m38.427387904s) must be at most 8760h0m0s", ""},
		{"absurd retry", []string{"--backend", "memory", "--retry=" + absurd}, nil, "--retry (1281023h53m38.427387904s) must be at most", ""},
		{"absurd stop timeout", []string{"--backend", "memory", "--stop-timeout=" + absurd}, nil, "--stop-timeout (1281023h53m38.427387904s) must be at most", ""},
		{"absurd demo duration", []string{"--demo-duration=" + absurd}, nil, "--demo-duration (1281023h53m38.427387904s) must be at most", ""},
		{"status with a bad setting", []string{"status", "--backend", "blob", "--blob-container", "c", "--blob-connection-string", "x", "--lease", "20s"}, nil, "--blob-connection-string", ""},
		{"status with a bad timing", []string{"status", "--backend", "memory", "--retry=1ns"}, nil, "--retry (1ns)", ""},
		{"http port out of range", []string{"--backend", "memory", "--http", "127.0.0.1:99999"}, nil, "--http has a port that is not a number from 1 to 65535", ""},
		{"http without port", []string{"--backend", "memory", "--http", "localhost"}, nil, "--http is not host:port", ""},
		{"http port 0", []string{"--backend", "memory", "--http", "127.0.0.1:0"}, nil, "--http has a port that is not a number from 1 to 65535", ""},
		{"http port from env", []string{"--backend", "memory"}, map[string]string{"FXELECTION_HTTP": ":http"}, "--http from FXELECTION_HTTP", ""},
		{"redis db out of range", []string{"--backend", "redis", "--redis-addr", "127.0.0.1:1", "--redis-db", "99999"}, nil, "--redis-db (99999) must be between 0 and 15", ""},
		{"negative redis db", []string{"--backend", "redis", "--redis-addr", "127.0.0.1:1", "--redis-db", "-1"}, nil, "--redis-db (-1) must be between 0 and 15", ""},
		{"field name inside a value", []string{"--backend", "memory", "--election", "LeaseName\t"}, nil, "--election: must be printable (byte 9 is a control character)", ""},
		{"bool flag", []string{"--redis-tls=maybe"}, nil, `--redis-tls ("maybe") is not true or false`, ""},
		{"bool flag from env", nil, map[string]string{"FXELECTION_S3_INSECURE": "maybe"}, "--s3-insecure from FXELECTION_S3_INSECURE", ""},
		{"redis url", []string{"--backend", "redis", "--redis-addr", "redis://app:s3cretpw@127.0.0.1:6379/0"}, nil, "--redis-addr is a URL; give host:port", "s3cretpw"},
		{"redis userinfo", []string{"--backend", "redis", "--redis-addr", "app:s3cretpw@127.0.0.1:6379"}, nil, "--redis-addr is not host:port (it must not contain '@'", "s3cretpw"},
		{"redis url from env", []string{"--backend", "redis"}, map[string]string{"FXELECTION_REDIS_ADDR": "rediss://:s3cretpw@10.0.0.1:6380"}, "--redis-addr from FXELECTION_REDIS_ADDR", "s3cretpw"},
		{"redis url in an int flag", []string{"--backend", "redis", "--redis-addr", "127.0.0.1:1", "--redis-db", "redis://app:s3cretpw@h:1"}, nil, "--redis-db", "s3cretpw"},
		{"postgres url", []string{"--backend", "postgres", "--postgres-dsn", "postgres://app:s3cretpw@127.0.0.1:5432/db?sslmode=bogus"}, nil, "--postgres-dsn", "s3cretpw"},
		{"postgres key=value", []string{"--backend", "postgres", "--postgres-dsn", "host=127.0.0.1 password = 's3cretpw' sslmode=bogus"}, nil, "--postgres-dsn", "s3cretpw"},
		// Issue 11: checks of the backend modules, through the flags' document.
		{"redis cluster with a database", []string{"--backend", "redis", "--redis-addr", "127.0.0.1:1,127.0.0.1:2", "--redis-db", "3"}, nil, "--redis-db", ""},
		{"s3 endpoint url", []string{"--backend", "s3", "--s3-endpoint", "http://127.0.0.1:9000", "--s3-bucket", "b", "--s3-secret-key", "s3cretpw"}, nil, "--s3-endpoint", "s3cretpw"},
		{"status with a malformed dsn", []string{"status", "--backend", "postgres", "--postgres-dsn", "postgres://app:s3cretpw@127.0.0.1:5432/db?sslmode=bogus"}, nil, "--postgres-dsn", "s3cretpw"},
		{"blob account key", []string{"--backend", "blob", "--blob-container", "c", "--blob-connection-string", "AccountName=a;AccountKey=s3cretpw;Bogus"}, nil, "--blob-connection-string", "s3cretpw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Bad input that is not caught would run until killed.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, tt.args...)
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
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.flag) {
				t.Fatalf("stderr %q: want one line naming %q", stderr.String(), tt.flag)
			}
			if singleDashFlag.MatchString(strings.TrimPrefix(lines[0], "example-app: ")) {
				t.Errorf("stderr %q names a flag with one dash", stderr.String())
			}
			if strings.Contains(stderr.String(), "goroutine") || stdout.Len() != 0 {
				t.Fatalf("unexpected output: stdout %q stderr %q", stdout.String(), stderr.String())
			}
			if tt.secret != "" && strings.Contains(stderr.String(), tt.secret) {
				t.Fatalf("stderr %q echoes the secret", stderr.String())
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
	testtier.Require(t, testtier.E2E)
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
