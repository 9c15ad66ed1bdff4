package redislease

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/fencedcounter"
	"github.com/fxelection/fxelection/internal/testserver"
)

// crc16 is Redis Cluster's key hash: CRC-16/XMODEM.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot computes a key's cluster slot, hash tags included, as Redis does.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key)) % 16384)
}

var slotNames = []string{
	"", "billing", "a", "reports/eu-1", "}starts-with-brace", "{tag}", "a}b{c", "%7B", "%", "ünïcødé", "x{}y",
	"with space", strings.Repeat("n", 200),
}

// TestKeysShareSlot checks the key layout: for every election (braces and
// percent signs included) and prefix, the lease and term keys hash to one
// slot, and distinct names get distinct keys.
func TestKeysShareSlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16 check value = %#x, want 0x31c3", got)
	}
	for _, prefix := range []string{"", "app:", "a:b:", "x%y:"} {
		b := mustNew(t, nil, Options{KeyPrefix: prefix})
		seen := map[string]string{}
		for _, name := range slotNames {
			lease, term := b.Keys(name)
			if keySlot(lease) != keySlot(term) {
				t.Errorf("prefix %q election %q: %s in slot %d, %s in slot %d", prefix, name, lease, keySlot(lease), term, keySlot(term))
			}
			if other, dup := seen[lease]; dup {
				t.Errorf("prefix %q: elections %q and %q share key %s", prefix, name, other, lease)
			}
			seen[lease] = name
		}
	}
	b := mustNew(t, nil, Options{})
	if lease, term := b.Keys("billing"); lease != "fxelection:{billing}:lease" || term != "fxelection:{billing}:term" {
		t.Errorf("keys = %s, %s", lease, term)
	}
	if b.WakeChannel() != "fxelection:wake" {
		t.Errorf("wake channel = %s", b.WakeChannel())
	}
}

// clusterServer starts a one-node Redis Cluster (all slots on one node):
// enough to make Redis enforce the cluster rules on scripts (keys declared,
// one slot).
func clusterServer(t *testing.T) string {
	t.Helper()
	srv := testserver.NewRedis(t, testserver.RedisOptions{Cluster: true})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Do(ctxT(t), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "cluster_state:ok", func() bool {
		info, err := c.ClusterInfo(ctxT(t)).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	return srv.Addr()
}

// TestCluster runs the conformance suite on Redis Cluster through a
// ClusterClient, and checks the key layout against the server's own CLUSTER
// KEYSLOT.
func TestCluster(t *testing.T) {
	addr := clusterServer(t)
	newCluster := func(t testing.TB) *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	admin := newCluster(t)
	keys := mustNew(t, admin, Options{})

	t.Run("KeySlot", func(t *testing.T) {
		for _, name := range slotNames {
			lease, term := keys.Keys(name)
			for _, k := range []string{lease, term} {
				got, err := admin.ClusterKeySlot(ctxT(t), k).Result()
				if err != nil {
					t.Fatal(err)
				}
				if int(got) != keySlot(k) {
					t.Fatalf("CLUSTER KEYSLOT %s = %d, computed %d", k, got, keySlot(k))
				}
			}
		}
	})
	t.Run("EnforcesOneSlot", func(t *testing.T) {
		// Proof that this server would refuse our scripts if their keys
		// were in different slots.
		err := admin.Eval(ctxT(t), "return 1", []string{"{a}:x", "{b}:x"}).Err()
		if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Fatalf("cross-slot script: %v, want CROSSSLOT", err)
		}
	})
	t.Run("FencedCounter", func(t *testing.T) {
		// redisfence on the cluster: the counter's keys share the fence
		// key's hash slot.
		fencedcounter.Check(t, fencedcounter.NewRedis(newCluster(t)))
	})
	t.Run("Conformance", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return mustNew(t, newCluster(t), Options{})
		}, electiontest.Options{
			Candidates: 20,
			Rounds:     10,
			DeleteRecord: func(t *testing.T, election string) {
				lease, term := keys.Keys(election)
				if err := admin.Del(ctxT(t), lease, term).Err(); err != nil {
					t.Fatal(err)
				}
			},
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				lease, _ := keys.Keys(election)
				if err := admin.Set(ctxT(t), lease, "foreign", ttl).Err(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}
