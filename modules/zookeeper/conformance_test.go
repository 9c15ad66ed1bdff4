package zklease

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
)

// deleteAll deletes election's node and everything under it through conn,
// as an operator cleaning up would.
func deleteAll(t *testing.T, conn *zk.Conn, dir string) {
	t.Helper()
	for range 20 {
		kids, _, err := conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			if err := conn.Delete(dir+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatal(err)
			}
		}
		err = conn.Delete(dir, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
		if !errors.Is(err, zk.ErrNotEmpty) {
			t.Fatal(err)
		}
	}
	t.Fatalf("could not delete %s", dir)
}

// putGarbage writes data as election's lease znode through conn (creating
// the election's node and its ancestors), as a foreign program might.
func putGarbage(t *testing.T, conn *zk.Conn, dir string, data []byte, flags int32) {
	t.Helper()
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		if _, err := conn.Create(dir[:i], nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(dir+"/"+leaseNodePrefix, data, flags|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// TestConformance runs the core's conformance suite (contract and smoke)
// against a real ZooKeeper: with the defaults (push wake-up, garbage in an
// ephemeral znode whose session ends after the TTL), and with push off,
// another prefix and persistent garbage (never expires).
func TestConformance(t *testing.T) {
	addr := server(t)
	admin := dial(t, testSession, addr)
	t.Run("Default", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, Options{}, addr)
		}, electiontest.Options{
			TTL: time.Second,
			DeleteRecord: func(t *testing.T, election string) {
				deleteAll(t, admin, DefaultPrefix+"/"+escapeName(election))
			},
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				// An ephemeral znode of a session of its own, closed after
				// ttl: ZooKeeper deletes the znode with it.
				c, _, err := zk.Connect([]string{addr}, testSession, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
				if err != nil {
					t.Fatal(err)
				}
				putGarbage(t, c, DefaultPrefix+"/"+escapeName(election), []byte("\x00not a lease record"), zk.FlagEphemeral)
				timer := time.AfterFunc(ttl, c.Close)
				t.Cleanup(func() { timer.Stop(); c.Close() })
			},
			StoreDown: func(t *testing.T) electiontest.DownStore {
				z := testserver.NewZooKeeper(t, testserver.ZooKeeperOptions{})
				// A session that outlasts the restart: the case checks that
				// the holder renews with its term afterwards, which holds only
				// while its session lives, and a loaded machine can take more
				// than testSession to start the server's JVM and reconnect
				// (go-zookeeper waits a second between rounds). ZooKeeper then
				// ends the lease with the session, as it must.
				b, err := New(dial(t, storeDownSession, z.Addr()), Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				return electiontest.DownStore{
					Backend: b,
					Kill:    z.Kill,
					Restart: z.Restart,
				}
			},
		})
	})
	t.Run("PollingPersistentGarbage", func(t *testing.T) {
		const prefix = "/conformance/other"
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, Options{Prefix: prefix, DisablePush: true}, addr)
		}, electiontest.Options{
			TTL: time.Second,
			DeleteRecord: func(t *testing.T, election string) {
				deleteAll(t, admin, prefix+"/"+escapeName(election))
			},
			GarbageNeverExpires: true,
			PushDisabled:        true,
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				putGarbage(t, admin, prefix+"/"+escapeName(election), []byte(`{"fxelection_zk":1,"holder":"a"}`), zk.FlagPersistent)
			},
		})
	})
}

// TestWatcher: a watch.Watcher on ZooKeeper sees every change of leader
// (graceful hand-over, stop, cut) within its documented bound.
func TestWatcher(t *testing.T) {
	addr := server(t)
	storetest.RunWatcherTest(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, Options{}, addr)
	})
}
