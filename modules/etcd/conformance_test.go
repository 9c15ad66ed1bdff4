package etcdlease

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
)

// TestConformance runs the core's conformance suite (contract and smoke)
// against a real etcd: with the defaults (push wake-up, garbage on an etcd
// lease, so it expires), and with push off, another prefix and garbage that
// has no etcd lease (so it never expires).
func TestConformance(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	deleteRecord := func(prefix string) func(t *testing.T, election string) {
		return func(t *testing.T, election string) {
			if _, err := admin.Delete(ctxT(t), prefix+election); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("Default", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, Options{}, c.Endpoints()...)
		}, electiontest.Options{
			// etcd lease TTLs are whole seconds.
			TTL:          time.Second,
			DeleteRecord: deleteRecord(DefaultKeyPrefix),
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				g, err := admin.Grant(ctxT(t), ttlSeconds(ttl))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := admin.Put(ctxT(t), DefaultKeyPrefix+election, "\x00not a lease record", clientv3.WithLease(g.ID)); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
	t.Run("PollingNoLeaseGarbage", func(t *testing.T) {
		const prefix = "conformance/other/"
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, Options{KeyPrefix: prefix, DisablePush: true}, c.Endpoints()...)
		}, electiontest.Options{
			TTL:                 time.Second,
			DeleteRecord:        deleteRecord(prefix),
			GarbageNeverExpires: true,
			PushDisabled:        true,
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				// A valid-looking record on no etcd lease: it would never
				// expire, so it is not a lease.
				rec, err := encodeRecord(fxelection.Lease{Holder: "a", Duration: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := admin.Put(ctxT(t), prefix+election, rec); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}

// TestWatcher: a watch.Watcher on etcd sees every change of leader
// (graceful hand-over, stop, cut) within its documented bound.
func TestWatcher(t *testing.T) {
	eps := sharedCluster(t).Endpoints()
	storetest.RunWatcherTest(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, Options{}, eps...)
	})
}
