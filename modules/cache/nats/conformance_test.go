package natslease

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestConformance runs the core's conformance suite (contract and smoke)
// against a real nats-server with JetStream: on a bucket the application
// owns (push wake-up on), and on a bucket the store manages (push off).
func TestConformance(t *testing.T) {
	srv, admin := newServer(t)
	adminJS := jsOf(t, connect(t, srv.URL()))
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
		// The whole bucket deleted and re-created behind the backends'
		// backs: its revisions start again at 1.
		Recreate: func(t *testing.T, _ string) { recreateBucket(t, adminJS) },
	}
	t.Run("Push", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBackend(t, srv.URL(), cachelease.Options{})
		}, hooks)
	})
	polling := hooks
	polling.PushDisabled = true // Subscribe does nothing: no wake-up to wait for
	t.Run("ManagedBucketPolling", func(t *testing.T) {
		electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
			return newBucketBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
		}, polling)
	})
}

// recreateBucket deletes the test bucket and creates it again, empty, as an
// operator (or a server restarted without its store, with a module that
// re-creates it) would. Setup is retried: JetStream may be slow under load.
func recreateBucket(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	if err := js.DeleteKeyValue(ctxT(t), testBucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("delete bucket: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := js.CreateKeyValue(ctxT(t), jetstream.KeyValueConfig{Bucket: testBucket})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("re-create bucket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
