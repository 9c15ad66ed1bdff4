package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection"
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
	os.Exit(testserver.RunMain(m, func() error {
		if shared.c != nil {
			return shared.c.RemoveAll()
		}
		return nil
	}))
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

// Fault-test timing: short, with the core's margins. etcd TTLs are whole
// seconds, so the lease is 2s.
const (
	faultLease  = 2 * time.Second
	faultRenew  = 1300 * time.Millisecond
	faultRetry  = 300 * time.Millisecond
	faultMaxBO  = 1200 * time.Millisecond
	leaderLimit = 30 * time.Second
)

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

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// watch records an elector's events for assertions.
type watch struct {
	mu     sync.Mutex
	events []fxelection.Event
}

func (w *watch) Observe(ev fxelection.Event) {
	if ev.Kind == fxelection.EventRenewed {
		return
	}
	w.mu.Lock()
	w.events = append(w.events, ev)
	w.mu.Unlock()
}

func (w *watch) all() []fxelection.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]fxelection.Event(nil), w.events...)
}

// find returns the first event matching pred, if any.
func (w *watch) find(pred func(fxelection.Event) bool) (fxelection.Event, bool) {
	for _, ev := range w.all() {
		if pred(ev) {
			return ev, true
		}
	}
	return fxelection.Event{}, false
}

// waitFor polls until an event matching pred was recorded.
func (w *watch) waitFor(t *testing.T, limit time.Duration, what string, pred func(fxelection.Event) bool) fxelection.Event {
	t.Helper()
	var ev fxelection.Event
	testserver.WaitFor(t, limit, what, func() bool {
		var ok bool
		ev, ok = w.find(pred)
		return ok
	})
	return ev
}

type candidate struct {
	e *fxelection.Elector
	w *watch
}

// startCandidate starts an elector on b with the fault-test timing.
func startCandidate(t *testing.T, b fxelection.Backend, election, identity string, tweak func(*fxelection.Config)) *candidate {
	t.Helper()
	cfg := fxelection.Config{
		Name:          election,
		Identity:      identity,
		Metadata:      map[string]string{"id": identity},
		LeaseDuration: faultLease,
		RenewDeadline: faultRenew,
		RetryPeriod:   faultRetry,
		MaxBackoff:    faultMaxBO,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := fxelection.New(cfg, b)
	if err != nil {
		t.Fatalf("New elector: %v", err)
	}
	w := &watch{}
	e.AddObserver(w)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return &candidate{e: e, w: w}
}

// waitLeader waits for exactly one of cs to lead and returns it.
func waitLeader(t *testing.T, cs []*candidate, limit time.Duration) (*candidate, fxelection.Lease) {
	t.Helper()
	var leader *candidate
	var lease fxelection.Lease
	testserver.WaitFor(t, limit, "a leader", func() bool {
		n := 0
		for _, c := range cs {
			if l, ok := c.e.Lease(); ok {
				leader, lease = c, l
				n++
			}
		}
		if n > 1 {
			t.Fatalf("%d candidates lead at once", n)
		}
		return n == 1
	})
	return leader, lease
}

func isStoreFailure(ev fxelection.Event) bool {
	return ev.Kind == fxelection.EventOperation && ev.Err != nil &&
		!errors.Is(ev.Err, fxelection.ErrLeaseHeld) && !errors.Is(ev.Err, fxelection.ErrLeaseLost) &&
		!errors.Is(ev.Err, fxelection.ErrNoLease)
}

func electionName(t testing.TB) string {
	return fmt.Sprintf("test-%d-%s", time.Now().UnixNano()%1_000_000, t.Name())
}
