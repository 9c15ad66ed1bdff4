package memcachedlease

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestServerSetIgnoresOrder: the server of a key depends on the set of
// normalised addresses only.
func TestServerSetIgnoresOrder(t *testing.T) {
	lists := [][]string{
		{"10.0.0.1:11211", "mc-b:11211", "[::1]:11211"},
		{"[::1]:11211", "10.0.0.1:11211", "mc-b:11211"},
		{"MC-B.:11211", "[0:0:0:0:0:0:0:1]:11211", "10.0.0.1:11211", "10.0.0.1:11211"},
	}
	var sets []*ServerSet
	for _, l := range lists {
		s, err := NewServerSet(l...)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, s)
	}
	if want := []string{"10.0.0.1:11211", "[::1]:11211", "mc-b:11211"}; !slices.Equal(sets[2].Addrs(), want) {
		t.Fatalf("normalised %v, want %v", sets[2].Addrs(), want)
	}
	used := map[string]int{}
	for i := range 3000 {
		key := fmt.Sprintf("fxelection.e%d", i)
		first, err := sets[0].PickServer(key)
		if err != nil {
			t.Fatal(err)
		}
		used[first.String()]++
		for _, s := range sets[1:] {
			if a, _ := s.PickServer(key); a.String() != first.String() {
				t.Fatalf("key %s: %s on one list, %s on another", key, first, a)
			}
		}
	}
	for a, n := range used {
		if n < 700 { // 1000 expected each
			t.Errorf("server %s got %d of 3000 keys: skewed", a, n)
		}
	}
	// Removing a server moves only its keys.
	two, _ := NewServerSet("10.0.0.1:11211", "mc-b:11211")
	for i := range 3000 {
		key := fmt.Sprintf("fxelection.e%d", i)
		before, _ := sets[0].PickServer(key)
		after, _ := two.PickServer(key)
		if before.String() != "[::1]:11211" && before.String() != after.String() {
			t.Fatalf("key %s moved from %s to %s though its server stayed", key, before, after)
		}
	}
	for _, bad := range []string{"", "host", "host:", ":1", "h:port", "a\x1bb:1", "a b:1", "memcached://h:1"} {
		if _, err := NewServerSet("h:1", bad); !errors.Is(err, ErrInvalidServers) || !strings.Contains(err.Error(), "address 2") {
			t.Errorf("NewServerSet(%q) = %v", bad, err)
		}
	}
	if _, err := NewServerSet(); !errors.Is(err, ErrInvalidServers) {
		t.Errorf("no address: %v", err)
	}
}

// TestServerOrderOneLeader: two candidates configured with the same two
// real memcached servers in another order (and one with a repetition)
// address the same server for every election: exactly one leads. With
// gomemcache's position-based ServerList (what Provision used), a
// two-server list reversed sends every key to the other server, and both
// candidates led.
func TestServerOrderOneLeader(t *testing.T) {
	s1 := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	s2 := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	provision := func(addr string) fxelection.Backend {
		m := &ConfigModule{Addr: addr, Timeout: modkit.Duration(2 * time.Second)}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := m.Provision(modkit.Context{Context: ctxT(t)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Cleanup() })
		b, err := m.Backend()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := provision(s1.Addr() + "," + s2.Addr())
	b := provision(s2.Addr() + ", " + s1.Addr() + "," + s2.Addr())
	for i := range 16 {
		e := fmt.Sprintf("%s-%d", electionName(t), i)
		req := func(id string) backendkit.AcquireRequest {
			return backendkit.AcquireRequest{Election: e, Identity: id, Incarnation: backendkit.NewIncarnation(), Duration: time.Minute}
		}
		if _, err := a.Acquire(ctxT(t), req("a")); err != nil {
			t.Fatalf("%s: a: %v", e, err)
		}
		var held *backendkit.HeldError
		if l, err := b.Acquire(ctxT(t), req("b")); !errors.As(err, &held) || held.Holder.Holder != "a" {
			t.Fatalf("%s: b, with the servers in another order: %+v, %v; want HeldError by a (two leaders)", e, l, err)
		}
	}
}
