package memcachedlease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/goleak"

	cachelease "github.com/fxelection/fxelection/modules/cache"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

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

func electionName(t testing.TB) string {
	return fmt.Sprintf("test-%d-%s", time.Now().UnixNano()%1_000_000, t.Name())
}
