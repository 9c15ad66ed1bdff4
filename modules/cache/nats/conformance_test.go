package natslease

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestConformance runs the core's conformance suite, end-to-end part
// included, against a real nats-server with JetStream: on a bucket the
// application owns (push wake-up on), and on a bucket the store manages
// (push off).
func TestConformance(t *testing.T) {
	srv, admin := newServer(t)
	keys, err := New(admin, nil, cachelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := electiontest.Options{
		PutGarbage: func(t *testing.T, election string, _ time.Duration) {
			if _, err := admin.Put(ctxT(t), keys.Key(election), []byte("\x00not a lease record")); err != nil {
				t.Fatal(err)
			}
		},
		GarbageNeverExpires: true, // no per-key TTL: a foreign value stays until deleted
		DeleteRecord: func(t *testing.T, election string) {
			if err := admin.Purge(ctxT(t), keys.Key(election)); err != nil {
				t.Fatal(err)
			}
		},
	}
	t.Run("Push", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, srv.URL(), cachelease.Options{})
		}, hooks)
	})
	t.Run("ManagedBucketPolling", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBucketBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
		}, hooks)
	})
}
