package memcachedlease

import (
	"errors"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestConformance runs the core's conformance suite (contract and smoke)
// against a real memcached.
func TestConformance(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	admin := newClient(t, srv.Addr())
	keys := newBackend(t, srv.Addr(), cachelease.Options{})
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, srv.Addr(), cachelease.Options{})
	}, electiontest.Options{
		PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
			exp, err := Expiration(ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := admin.Set(&memcache.Item{Key: keys.Key(election), Value: []byte("\x00not a lease record"), Expiration: exp}); err != nil {
				t.Fatal(err)
			}
		},
		DeleteRecord: func(t *testing.T, election string) {
			if err := admin.Delete(keys.Key(election)); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
				t.Fatal(err)
			}
		},
		// The store's namespace is the whole server: flush_all, as a
		// server restarted empty would be.
		Recreate: func(t *testing.T, _ string) {
			if err := admin.FlushAll(); err != nil {
				t.Fatal(err)
			}
		},
		// memcached has no change notifications: the Backend is a
		// backendkit.Notifier whose Subscribe does nothing.
		PushDisabled: true,
	})
}
