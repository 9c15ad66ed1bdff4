package caslease_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
	"github.com/fxelection/fxelection/fxelection/electiontest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// closeOnCleanup stops b's watch when the test ends.
func closeOnCleanup(t testing.TB, b *caslease.NotifyingBackend) *caslease.NotifyingBackend {
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TestConformance runs the public conformance suite on the algorithm over
// fake registers, one per expiry model and store shape: observed time with
// tombstones and push (NATS KV's shape), observed time on a store that
// keeps records, without push (DynamoDB's and Kubernetes' shape, S3's
// without KeepsRecords), and server TTL (memcached's shape).
func TestConformance(t *testing.T) {
	cases := []struct {
		name  string
		store *fakeStore
		push  bool
	}{
		{"ObservedTombstonesPush", &fakeStore{tombstones: true}, true},
		{"ObservedKeepsRecords", &fakeStore{caps: caslease.Capabilities{KeepsRecords: true}}, false},
		{"ServerTTL", &fakeStore{caps: caslease.Capabilities{ServerTTL: true}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store
			var reg caslease.ByteStore = s
			if !tc.push {
				reg = watchless{s}
			}
			key := func(e string) string { return caslease.EscapedKey(testPrefix, e, 0) }
			electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
				return closeOnCleanup(t, newBackend(reg))
			}, electiontest.Options{
				PutGarbage: func(t *testing.T, election string, ttl time.Duration) {
					s.Put(key(election), []byte("\x00not a lease record"))
				},
				GarbageNeverExpires: true, // Put stores without TTL
				DeleteRecord:        func(t *testing.T, election string) { s.Delete(key(election)) },
				Recreate:            func(t *testing.T, _ string) { s.Recreate() },
				PushDisabled:        !tc.push,
			})
		})
	}
}
