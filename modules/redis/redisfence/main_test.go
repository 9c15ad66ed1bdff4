package redisfence_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newLease is redislease.New for options known to be valid.
func newLease(t testing.TB, c redis.UniversalClient) *redislease.Backend {
	t.Helper()
	b, err := redislease.New(c, redislease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newServer(t testing.TB) *testserver.Redis {
	t.Helper()
	return testserver.NewRedis(t, testserver.RedisOptions{})
}

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT     = electiontesting.Context
	election = electiontesting.Election
)
