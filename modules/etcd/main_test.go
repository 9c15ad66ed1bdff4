package etcdlease

import (
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

// shared is the one-member etcd most tests use; fault tests start their own.
var shared struct {
	once sync.Once
	c    *etcdtest.Cluster
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		return func() error {
			if shared.c != nil {
				return shared.c.RemoveAll()
			}
			return nil
		}
	})
}

// sharedCluster returns the shared etcd, started on first use.
func sharedCluster(t testing.TB) *etcdtest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "etcdlease-test-"); shared.err == nil {
			shared.c, shared.err = etcdtest.New(shared.dir, etcdtest.Options{Fsync: os.Getenv("FXELECTION_ETCD_FSYNC") == "1"})
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

// leaderLimit bounds the wait for a leader: generous, since the fault tests
// restart etcd members.
const leaderLimit = 30 * time.Second

// newBackend returns a Backend on a client of its own (as another process
// would have) of endpoints, closed at the end of the test.
func newBackend(t testing.TB, opts Options, endpoints ...string) *Backend {
	t.Helper()
	return mustNew(t, etcdtest.NewClient(t, endpoints...), opts)
}

// mustNew is New for options known to be valid.
func mustNew(t testing.TB, c *clientv3.Client, opts Options) *Backend {
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
