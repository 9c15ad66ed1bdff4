package main

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStatusDeadRedisOneLine: "status" against a Redis that refuses
// connections prints exactly one line on stderr, the error: go-redis's own
// log lines (one per failed dial, on the standard logger) do not reach it.
func TestStatusDeadRedisOneLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: every dial is refused
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, "status", "--backend", "redis", "--redis-addr", addr, "--election", "x")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("status against a dead Redis succeeded: %s", stdout.String())
	}
	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "example-app: status: ") {
		t.Fatalf("stderr has %d lines, want the one error line:\n%s", len(lines), stderr.String())
	}
	if strings.Contains(stdout.String(), "redis:") {
		t.Fatalf("go-redis lines on stdout:\n%s", stdout.String())
	}
}
