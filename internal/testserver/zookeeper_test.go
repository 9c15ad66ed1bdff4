package testserver

import "testing"

func TestZooKeeperKillRestart(t *testing.T) {
	z := NewZooKeeper(t, ZooKeeperOptions{})
	addr := z.Addr()
	if err := zookeeperReady(addr); err != nil {
		t.Fatal(err)
	}
	if err := z.Kill(); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, addr)
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	if z.Addr() != addr {
		t.Fatalf("address changed: %s → %s", addr, z.Addr())
	}
	if err := zookeeperReady(addr); err != nil {
		t.Fatal(err)
	}
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, addr)
}
