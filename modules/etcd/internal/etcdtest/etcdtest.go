// Package etcdtest runs real etcd servers for the etcd backend's tests: etcd
// itself (go.etcd.io/etcd/server/v3/embed), embedded in the test binary, on
// free loopback ports, one member or a cluster, each member stoppable and
// restartable on its own data directory. Nothing is installed: the server
// is compiled into the test, so its tests never skip.
package etcdtest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fxelection/fxelection/internal/testserver"
)

// readyTimeout bounds a member's start (and a cluster's first election) on
// a busy machine.
const readyTimeout = 60 * time.Second

// Options tune a cluster. The zero value is a one-member cluster with a
// 50ms heartbeat and a 500ms election timeout (so etcd's minimum lease TTL
// is 1s).
type Options struct {
	// Members is the number of members. Default: 1.
	Members int
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout. Default: 50 and 500 for one member, 100 and 1000 (etcd's
	// defaults) for more, which stay stable on a loaded machine.
	TickMs, ElectionMs uint
	// Fsync keeps etcd's fsync of its WAL and backend. Default (false):
	// off (etcd's --unsafe-no-fsync), as the Postgres test servers run
	// with fsync=off: on a shared disk every Raft write would otherwise
	// wait for other jobs' flushes. A graceful Stop still keeps all data
	// for Restart (the OS has it).
	Fsync bool
}

// Member is one etcd member.
type Member struct {
	// Name is the member's name (m0, m1, …).
	Name string

	cfg embed.Config

	mu sync.Mutex
	e  *embed.Etcd // nil while stopped
}

// Cluster is a running etcd cluster.
type Cluster struct {
	// Members are the cluster's members, in start order.
	Members []*Member
	dir     string
}

// Start starts a cluster for t, closed when t ends. A failure to start fails
// t: etcd is compiled in, so there is nothing to skip.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	dir := t.TempDir()
	c, err := New(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// New starts a cluster with its data directories under dir and waits until
// it has a leader. Close it with Close. A port found free and taken by
// another process before the member bound it makes New start again on
// other ports.
func New(dir string, o Options) (*Cluster, error) {
	for attempt := 0; ; attempt++ {
		d := dir
		if attempt > 0 {
			d = filepath.Join(dir, fmt.Sprintf("attempt-%d", attempt))
		}
		c, err := newOnce(d, o)
		if err == nil || attempt == 4 || !portInUse(err) {
			return c, err
		}
	}
}

// portInUse reports whether err is a listener's "address already in use".
func portInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// newOnce is New on ports found free once.
func newOnce(dir string, o Options) (*Cluster, error) {
	if o.Members == 0 {
		o.Members = 1
	}
	if o.TickMs == 0 {
		o.TickMs, o.ElectionMs = 50, 500
		if o.Members > 1 {
			o.TickMs, o.ElectionMs = 100, 1000
		}
	}
	c := &Cluster{dir: dir}
	var initial []string
	for i := range o.Members {
		cp, err1 := testserver.FreePort()
		pp, err2 := testserver.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("m%d", i)
		cfg := embed.NewConfig()
		cfg.Name = name
		cfg.Dir = filepath.Join(dir, name)
		cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cp)}
		pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pp)}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
		cfg.ListenMetricsUrls = nil
		cfg.TickMs, cfg.ElectionMs = o.TickMs, o.ElectionMs
		cfg.UnsafeNoFsync = !o.Fsync
		// bcrypt's minimum cost (bcrypt.MinCost) for the tests that turn
		// authentication on: the default cost (10) hashes for seconds
		// under the race detector on an oversubscribed machine, longer
		// than a client's dial timeout to fetch its token. What is tested
		// is who may do what, not the hash.
		cfg.BcryptCost = 4
		cfg.InitialClusterToken = "fxelection-test"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		initial = append(initial, fmt.Sprintf("%s=%s", name, pu.String()))
		c.Members = append(c.Members, &Member{Name: name, cfg: *cfg})
	}
	for _, m := range c.Members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
	}
	// Members of a new cluster wait for each other: start them together.
	errs := make([]error, len(c.Members))
	var wg sync.WaitGroup
	for i, m := range c.Members {
		wg.Go(func() { errs[i] = m.start(0) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Endpoint())
	}
	return out
}

// Endpoint is the member's client URL (http://127.0.0.1:port).
func (m *Member) Endpoint() string { return m.cfg.AdvertiseClientUrls[0].String() }

// Client returns a client of the whole cluster for t, closed when t ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return NewClient(t, c.Endpoints()...)
}

// NewClient returns a client of endpoints for t, closed when t ends. Its
// dial timeout is short so keep-alives to a stopped member fail fast.
func NewClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Restart starts the member (again) on its data directory and ports, and
// waits until it serves (for a new cluster: until the cluster has a
// leader). Starting a running member is a no-op.
func (m *Member) Restart() error { return m.start(20) }

// start starts the member, retrying up to retries times, 250ms apart,
// while its ports are still in use.
func (m *Member) start(retries int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.e != nil {
		return nil
	}
	cfg := m.cfg
	var e *embed.Etcd
	var err error
	// A port freed by Stop can linger a moment.
	for attempt := 0; ; attempt++ {
		if e, err = embed.StartEtcd(&cfg); err == nil || attempt >= retries || !portInUse(err) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd member %s: %w", m.Name, err)
	case <-time.After(readyTimeout):
		e.Close()
		return fmt.Errorf("etcd member %s not ready after %v", m.Name, readyTimeout)
	}
	m.e = e
	return nil
}

// Stop stops the member (gracefully: it closes its listeners and its Raft
// node); its data directory stays for Restart. It waits for etcd's close,
// which drains the client connections: open streams (watches) for up to
// etcd's request timeout (5 s + two election timeouts), and a connection
// that has not sent its first bytes yet until it sends them or closes (a
// client behind a stalled proxy can hold Stop up).
func (m *Member) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.e != nil {
		m.e.Close()
		<-m.e.Server.StopNotify()
		m.e = nil
	}
}

// Running reports whether the member runs.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.e != nil
}

// IsLeader reports whether the member runs and is the etcd leader.
func (m *Member) IsLeader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.e != nil && m.e.Server.Leader() == m.e.Server.MemberID()
}

// Leader returns the member that leads the cluster, or nil.
func (c *Cluster) Leader() *Member {
	for _, m := range c.Members {
		if m.IsLeader() {
			return m
		}
	}
	return nil
}

// Close stops every member and removes nothing (the caller owns dir).
func (c *Cluster) Close() error {
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Go(m.Stop)
	}
	wg.Wait()
	return nil
}

// RemoveAll stops the cluster and deletes its data directories.
func (c *Cluster) RemoveAll() error {
	_ = c.Close()
	return os.RemoveAll(c.dir)
}
