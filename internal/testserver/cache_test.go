package testserver

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// memcachedDo sends one command over a raw connection and returns the
// first reply line.
func memcachedDo(t *testing.T, addr, cmd string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial memcached: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("write %q: %v", cmd, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("read reply to %q: %v", cmd, err)
	}
	return strings.TrimSpace(line)
}

func TestMemcachedKillRestartEmpty(t *testing.T) {
	m := NewMemcached(t, MemcachedOptions{MemoryMB: 8})
	addr := m.Addr()
	if got := memcachedDo(t, addr, "set k 0 0 1\r\nv"); got != "STORED" {
		t.Fatalf("set = %q", got)
	}
	if got := memcachedDo(t, addr, "get k"); got != "VALUE k 0 1" {
		t.Fatalf("get = %q", got)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, addr)
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if m.Addr() != addr {
		t.Fatalf("address changed: %s → %s", addr, m.Addr())
	}
	if got := memcachedDo(t, addr, "get k"); got != "END" {
		t.Fatalf("get after restart = %q, want END (empty)", got)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, addr)
}

func TestNatsRestartKeepsOrClearsData(t *testing.T) {
	n := NewNats(t, NatsOptions{})
	addr := n.Addr()
	if !strings.HasPrefix(n.URL(), "nats://127.0.0.1:") {
		t.Fatalf("URL = %q", n.URL())
	}
	if err := n.ClearData(); err == nil {
		t.Fatal("ClearData on a running server succeeded")
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, addr)
	if err := n.ClearData(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n.storeDir()); !os.IsNotExist(err) {
		t.Fatalf("store dir after ClearData: %v", err)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := natsReady(addr, n.name); err != nil {
		t.Fatal(err)
	}
	if err := natsReady(addr, "someone-else"); err == nil {
		t.Fatal("natsReady accepted another server name")
	}
}
