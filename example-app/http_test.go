package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRealModeHTTP runs one candidate on the in-memory backend and checks
// its endpoints, then stops it with SIGTERM.
func TestRealModeHTTP(t *testing.T) {
	addr := freeAddr(t)
	cmd := exec.Command(binary, "--backend", "memory", "--election", "web", "--id", "solo", "--http", addr,
		"--lease", "3s", "--renew-deadline", "2s", "--retry", "500ms", "--log-format", "json")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	deadline := time.Now().Add(30 * time.Second)
	var leader leaderJSON
	for {
		if code, body := get(t, "http://"+addr+"/leader"); code == 200 {
			if err := json.Unmarshal([]byte(body), &leader); err != nil {
				t.Fatalf("/leader: %v: %q", err, body)
			}
			if leader.Leading {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("never led")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if leader.Leader != "solo" || leader.Term == 0 || leader.Election != "web" || leader.Metadata["http"] != addr {
		t.Fatalf("/leader = %+v", leader)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, "http://"+addr+path); code != 200 || !strings.Contains(body, `"election":"web"`) {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	code, body := get(t, "http://"+addr+"/metrics")
	if code != 200 || !strings.Contains(body, `fxelection_is_leader{election="web",identity="solo"} 1`) {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within the stop timeout after SIGTERM")
	}
}
