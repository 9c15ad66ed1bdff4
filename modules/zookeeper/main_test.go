package zklease

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
)

// shared is the ZooKeeper most tests use; fault tests start their own.
var shared *testserver.Private[*testserver.ZooKeeper]

func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		shared = testserver.StartPrivate(func() (*testserver.ZooKeeper, error) {
			return testserver.StartZooKeeper(testserver.ZooKeeperOptions{})
		}, nil)
		return shared.Close
	})
}

// testSession is the session timeout the tests' connections ask for: above
// the end-to-end tests' RenewDeadline (2s), as the package's rule requires.
const testSession = 4 * time.Second

// storeDownSession is the session timeout of the conformance suite's
// StoreDown case: half its lease (a minute), the time the case allows the
// client to come back after the server's restart.
const storeDownSession = 30 * time.Second

// server returns the shared ZooKeeper's address.
func server(t testing.TB) string {
	t.Helper()
	return shared.Get(t).Addr()
}

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// dial connects to addrs with a session of timeout, closed when t ends.
func dial(t testing.TB, timeout time.Duration, addrs ...string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(addrs, timeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newBackend returns a Backend on a connection of its own (as another
// process would have), closed at the end of the test.
func newBackend(t testing.TB, opts Options, addrs ...string) *Backend {
	t.Helper()
	c := dial(t, testSession, addrs...)
	b, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() }) // before the connection's Cleanup
	return b
}

// Helpers every backend's tests share (internal/electiontesting).
var (
	ctxT         = electiontesting.Context
	electionName = electiontesting.Election
)
