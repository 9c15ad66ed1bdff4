package redislease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/electiontest/fencedcounter"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestConformance runs the core's conformance suite, end-to-end part
// included, against a real redis-server: with the defaults (clock-based
// terms, push wake-up, a foreign string as garbage), and with sequential
// terms, push off and a foreign list as garbage. The Locks part's holders
// write through redisfence on the same server.
func TestConformance(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	locks := electiontest.LockOptions{Counter: func(t *testing.T) electiontest.FencedCounter {
		return fencedcounter.NewRedis(newClient(t, srv.Addr()))
	}}
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
			Locks:        locks,
			PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
				lease, _ := keys.Keys(election)
				if err := admin.Set(ctxT(t), lease, "\x00not a lease record", ttl).Err(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
	t.Run("SequentialPolling", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, srv.Addr(), Options{SequentialTerms: true, DisablePush: true})
		}, electiontest.Options{
			// Sequential terms start again at 1 once the counter is gone
			// (documented).
			DeleteRecord:      deleteRecord,
			DeleteResetsTerms: true,
			PushDisabled:      true,
			Locks:             locks,
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
