package redislease

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newServer(t testing.TB, opts testserver.RedisOptions) *testserver.Redis {
	t.Helper()
	return testserver.NewRedis(t, opts)
}

// newClient returns a client of its own (as another process would have),
// closed at the end of the test.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newBackend(t testing.TB, addr string, opts Options) *Backend {
	t.Helper()
	return mustNew(t, newClient(t, addr), opts)
}

// mustNew is New for options known to be valid.
func mustNew(t testing.TB, c redis.UniversalClient, opts Options) *Backend {
	t.Helper()
	b, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT         = electiontesting.Context
	electionName = electiontesting.Election
)
