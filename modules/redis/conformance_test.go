package redislease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/featuretest"
	"github.com/fxelection/fxelection/internal/fencedcounter"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestConformance runs the core's conformance suite (contract and smoke)
// against a real redis-server: with the defaults (push wake-up, a foreign
// string as garbage), and with push off and a foreign list as garbage.
func TestConformance(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	keys := mustNew(t, admin, Options{})
	deleteRecord := func(t *testing.T, election string) {
		lease, term := keys.Keys(election)
		if err := admin.Del(ctxT(t), lease, term).Err(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("Default", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, srv.Addr(), Options{})
		}, electiontest.Options{
			DeleteRecord: deleteRecord,
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				lease, _ := keys.Keys(election)
				if err := admin.Set(ctxT(t), lease, "\x00not a lease record", ttl).Err(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
	t.Run("Polling", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, srv.Addr(), Options{DisablePush: true})
		}, electiontest.Options{
			DeleteRecord: deleteRecord,
			PushDisabled: true,
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				lease, _ := keys.Keys(election)
				if err := admin.RPush(ctxT(t), lease, "foreign").Err(); err != nil {
					t.Fatal(err)
				}
				if err := admin.PExpire(ctxT(t), lease, ttl).Err(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}

// TestConformanceFeatures runs the repository's feature cases (electors,
// locks and semaphores: internal/featuretest) on Redis, the push store, at
// real timings, with and without push wake-up (e2e tier; they run on the
// in-memory backend under fake time in the default tier). The lock cases'
// holders write through redisfence on the same server.
func TestConformanceFeatures(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := newServer(t, testserver.RedisOptions{})
	opts := featuretest.Options{Counter: func(t *testing.T) fencedcounter.Counter {
		return fencedcounter.NewRedis(newClient(t, srv.Addr()))
	}}
	for _, tc := range []struct {
		name string
		opts Options
	}{{"Push", Options{}}, {"Polling", Options{DisablePush: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			featuretest.Run(t, func(t *testing.T) fxelection.Backend {
				return newBackend(t, srv.Addr(), tc.opts)
			}, opts)
		})
	}
}
