package memcachedlease

import (
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT         = electiontesting.Context
	electionName = electiontesting.Election
)

// newClient returns a client of its own (as another process would have),
// closed at the end of the test.
func newClient(t testing.TB, addr string) *memcache.Client {
	t.Helper()
	c := memcache.New(addr)
	c.Timeout = 2 * time.Second
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newBackend(t testing.TB, addr string, opts cachelease.Options) *cachelease.Backend {
	t.Helper()
	b, err := New(newClient(t, addr), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
