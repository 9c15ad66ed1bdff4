package testserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedisPairFailover: a write on the primary reaches the replica; after
// Failover the promoted replica takes writes and keeps the old ones; after
// Rejoin the old primary replicates the new one.
func TestRedisPairFailover(t *testing.T) {
	p := NewRedisPair(t)
	first := p.Primary().Addr()
	if got, err := redisCommand(first, "SET", "k", "v1"); err != nil || got != "OK" {
		t.Fatalf("SET = %q, %v", got, err)
	}
	WaitFor(t, replicaSyncTimeout, "the write to reach the replica", func() bool {
		got, err := redisCommand(p.Replica().Addr(), "GET", "k")
		return err == nil && got == "v1"
	})
	next, err := p.Failover(0)
	if err != nil {
		t.Fatal(err)
	}
	if next.Addr() == first {
		t.Fatal("the primary did not change")
	}
	if got, err := redisCommand(next.Addr(), "GET", "k"); err != nil || got != "v1" {
		t.Fatalf("GET on the promoted replica = %q, %v", got, err)
	}
	if got, err := redisCommand(next.Addr(), "SET", "k", "v2"); err != nil || got != "OK" {
		t.Fatalf("SET on the promoted replica = %q, %v", got, err)
	}
	if err := p.Rejoin(); err != nil {
		t.Fatal(err)
	}
	if p.Replica().Addr() != first {
		t.Fatalf("replica %s, want the former primary %s", p.Replica().Addr(), first)
	}
	if got, err := redisCommand(first, "GET", "k"); err != nil || got != "v2" {
		t.Fatalf("GET on the rejoined server = %q, %v", got, err)
	}
	if got, _ := redisCommand(first, "SET", "k", "v3"); !strings.HasPrefix(got, "-READONLY") {
		t.Fatalf("SET on the rejoined replica = %q, want READONLY", got)
	}
}

// TestPostgresPairFailover: the standby is in recovery, is promoted by
// Failover, and the old primary rejoins as a standby of the new one.
func TestPostgresPairFailover(t *testing.T) {
	p := NewPostgresPair(t)
	first := p.Primary().Addr()
	if err := pgReady(p.Standby().Addr()); err != nil {
		t.Fatalf("standby: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.Standby().dataDir(), "standby.signal")); err != nil {
		t.Fatalf("standby.signal: %v", err)
	}
	next, err := p.Failover(0)
	if err != nil {
		t.Fatal(err)
	}
	if next.Addr() == first {
		t.Fatal("the primary did not change")
	}
	if _, err := os.Stat(filepath.Join(next.dataDir(), "standby.signal")); err == nil {
		t.Fatal("the promoted server still has standby.signal")
	}
	if err := p.Rejoin(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.Standby().dataDir(), "standby.signal")); err != nil {
		t.Fatalf("rejoined server's standby.signal: %v", err)
	}
	if err := pgReady(p.Standby().Addr()); err != nil {
		t.Fatalf("rejoined standby: %v", err)
	}
}
