package natslease

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/storetest"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestFaults runs the shared fault scenarios against a real nats-server,
// with stores that re-create their bucket: killed and restarted without its
// JetStream store, the bucket's stream purged, the key deleted, a foreign
// value (never expiring: deleted by the scenario), down at start.
func TestFaults(t *testing.T) {
	srv, admin := newServer(t)
	keys, err := New(admin, nil, cachelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js := jsOf(t, connect(t, srv.URL()))
	storetest.RunFaultTests(t, storetest.FaultHooks{
		NewBackend: func(t *testing.T) fxelection.Backend { return newBucketBackend(t, srv.URL(), cachelease.Options{}) },
		Server:     srv,
		Empty: func(t *testing.T) {
			if err := srv.ClearData(); err != nil {
				t.Fatal(err)
			}
		},
		Flush: func(t *testing.T) {
			st, err := js.Stream(ctxT(t), "KV_"+testBucket)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Purge(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		},
		Delete: func(t *testing.T, election string) {
			if err := admin.Delete(ctxT(t), keys.Key(election)); err != nil {
				t.Fatal(err)
			}
		},
		PutForeign: func(t *testing.T, election string, _ time.Duration) {
			if _, err := admin.Put(ctxT(t), keys.Key(election), []byte("foreign")); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestPushWakesFollower: with a retry period far longer than the test's
// bound, a follower takes over a released lease only thanks to the KV
// watch.
func TestPushWakesFollower(t *testing.T) {
	srv, _ := newServer(t)
	storetest.CheckPushHandover(t, newBackend(t, srv.URL(), cachelease.Options{}), newBackend(t, srv.URL(), cachelease.Options{}), storetest.PushOptions{})
}

// TestBadInput: empty and invalid bucket names, bad prefixes and hostile
// election names.
func TestBadInput(t *testing.T) {
	for _, name := range []string{"", "a b", "a.b", "a*", "a>", "é", strings.Repeat("x", 201)} {
		if _, err := NewBucketStore(nil, jetstream.KeyValueConfig{Bucket: name}); err == nil {
			t.Errorf("NewBucketStore(nil, %q) succeeded", name)
		}
	}
	srv, _ := newServer(t)
	js := jsOf(t, connect(t, srv.URL()))
	for _, name := range []string{"", "a.b", "a b"} {
		if _, err := NewBucketStore(js, jetstream.KeyValueConfig{Bucket: name}); !errors.Is(err, ErrBucketRequired) {
			t.Errorf("NewBucketStore(%q) = %v, want ErrBucketRequired", name, err)
		}
	}
	if _, err := New(nil, nil, cachelease.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	for _, p := range []string{".x", "a..b", "a>", "a*", "a b"} {
		if _, err := newBucketBackendErr(t, srv.URL(), cachelease.Options{KeyPrefix: p}); !errors.Is(err, cachelease.ErrInvalidPrefix) {
			t.Errorf("prefix %q: %v, want ErrInvalidPrefix", p, err)
		}
	}
	// A duration no record may state is refused before anything is written.
	e := electionName(t)
	if _, err := newBackend(t, srv.URL(), cachelease.Options{}).Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 400 * 24 * time.Hour}); err == nil || !strings.Contains(err.Error(), "Duration") {
		t.Fatalf("Acquire with a 400-day lease: %v, want refused", err)
	}
	if _, err := newBackend(t, srv.URL(), cachelease.Options{}).Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("a refused Acquire wrote something: %v", err)
	}
	// Names NATS would read as wildcards or subject separators each get
	// their own key.
	a := newBackend(t, srv.URL(), cachelease.Options{})
	b := newBackend(t, srv.URL(), cachelease.Options{})
	names := []string{"*", ">", "a.>", "a.b", "a b", "a=2Eb", strings.Repeat("é", 100)}
	electiontest.CheckElectionNames(t, a, b, names)
}

func newBucketBackendErr(t *testing.T, url string, opts cachelease.Options) (*cachelease.Backend, error) {
	s, err := NewBucketStore(jsOf(t, connect(t, url)), jetstream.KeyValueConfig{Bucket: testBucket})
	if err != nil {
		return nil, err
	}
	return backendOn(s, opts)
}

// TestPushSurvivesServerRestart: the KV watch comes back after the server
// restarts (with its store): once it is re-established (every subscriber is
// woken then), a release wakes the follower long before its next retry.
// The bound is the protocol's: a follower not woken tries again a retry
// period (2 min) after its last attempt, so a takeover within half of it
// (a minute: slack for a busy machine and for one failed attempt's
// backoff while JetStream recovers) is the wake-up's doing.
func TestPushSurvivesServerRestart(t *testing.T) {
	srv, _ := newServer(t)
	fb := newBackend(t, srv.URL(), cachelease.Options{})
	var woken atomic.Int32
	t.Cleanup(fb.Subscribe("probe", func() { woken.Add(1) }))
	electiontesting.WaitFor(t, electiontesting.Eventually, "the first watch", func() bool { return woken.Load() > 0 })
	storetest.CheckPushHandover(t, newBackend(t, srv.URL(), cachelease.Options{}), fb, storetest.PushOptions{
		Retry:    2 * time.Minute,
		Wait:     time.Minute,
		Handover: time.Minute,
		BeforeStop: func(t *testing.T) {
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			woken.Store(0)
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			electiontesting.WaitFor(t, 30*time.Second, "the watch to be re-established", func() bool { return woken.Load() > 0 })
		},
	})
}
