package testserver

import (
	"os"
	"strings"
	"testing"
)

func TestMemcachedKillRestartEmpty(t *testing.T) {
	m := NewMemcached(t, MemcachedOptions{MemoryMB: 8})
	addr := m.Addr()
	if got := rawDo(t, addr, "set k 0 0 1\r\nv"); got != "STORED" {
		t.Fatalf("set = %q", got)
	}
	if got := rawDo(t, addr, "get k"); got != "VALUE k 0 1" {
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
	if got := rawDo(t, addr, "get k"); got != "END" {
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
