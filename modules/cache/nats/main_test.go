package natslease

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testBucket = "leases"

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT         = electiontesting.Context
	electionName = electiontesting.Election
)

// connect returns a connection of its own (as another process would have),
// closed at the end of the test. It keeps reconnecting while the server is
// down.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url,
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func jsOf(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// newServer starts nats-server and creates the test bucket; it returns the
// server and an admin handle on the bucket.
func newServer(t testing.TB) (*testserver.Nats, jetstream.KeyValue) {
	t.Helper()
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	return srv, createBucket(t, srv)
}

func createBucket(t testing.TB, srv *testserver.Nats) jetstream.KeyValue {
	t.Helper()
	js := jsOf(t, connect(t, srv.URL()))
	var kv jetstream.KeyValue
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		kv, err = js.CreateOrUpdateKeyValue(ctxT(t), jetstream.KeyValueConfig{Bucket: testBucket})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // JetStream may still be starting
	}
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return kv
}

// newBackend returns a Backend on a connection of its own bound to the
// test bucket.
func newBackend(t testing.TB, url string, opts cachelease.Options) *cachelease.Backend {
	t.Helper()
	nc := connect(t, url)
	kv, err := jsOf(t, nc).KeyValue(ctxT(t), testBucket)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(kv, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// newBucketBackend returns a Backend on a connection of its own whose
// store creates the test bucket when it is missing.
func newBucketBackend(t testing.TB, url string, opts cachelease.Options) *cachelease.Backend {
	t.Helper()
	s, err := NewBucketStore(jsOf(t, connect(t, url)), jetstream.KeyValueConfig{Bucket: testBucket})
	if err != nil {
		t.Fatal(err)
	}
	b, err := backendOn(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
