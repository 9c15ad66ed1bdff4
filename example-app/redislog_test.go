package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// deadAddr returns a loopback address nothing listens on: every dial is
// refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestStatusDeadStoreOneLine: "status" against a store that refuses
// connections exits 1 with exactly one line on stderr, the error, and
// nothing on stdout. Third-party libraries' own log lines (go-redis logs one
// per failed dial on the standard logger unless the program routes them)
// reach neither, in either log format.
func TestStatusDeadStoreOneLine(t *testing.T) {
	addr := deadAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	tests := []struct {
		name string
		args []string
	}{
		{"redis", []string{"--backend", "redis", "--redis-addr", addr}},
		{"redis json", []string{"--backend", "redis", "--redis-addr", addr, "--log-format", "json"}},
		{"postgres", []string{"--backend", "postgres", "--postgres-dsn", "host=" + host + " port=" + port + " user=u dbname=db connect_timeout=5"}},
		{"s3", []string{"--backend", "s3", "--s3-endpoint", addr, "--s3-bucket", "bucket", "--s3-insecure"}},
		{"blob", []string{"--backend", "blob", "--blob-container", "c", "--lease", "20s",
			"--blob-connection-string", "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=YWJj;BlobEndpoint=http://" + addr + "/a"}},
		{"memcached", []string{"--backend", "memcached", "--memcached-addr", addr}},
		{"nats", []string{"--backend", "nats", "--nats-url", "nats://" + addr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, binary, append([]string{"status", "--election", "x"}, tt.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want code 1; stdout %q, stderr %q", err, stdout.String(), stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "example-app: status: ") {
				t.Fatalf("stderr has %d lines, want the one error line:\n%s", len(lines), stderr.String())
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
