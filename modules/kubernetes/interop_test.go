package kubelease_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testtier"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// The timing both kinds of elector use in the interop test: client-go
// waits its own LeaseDuration, so it must be the same on both sides.
const (
	ioLease = 3 * time.Second
	ioRenew = 2 * time.Second
	ioRetry = 500 * time.Millisecond
	ioSlack = 10 * time.Second // scheduling on a loaded machine, on top of protocol bounds
)

// clientGoElector is a client-go LeaderElector on a Lease, with its
// leadership recorded in rec as an elector's would be.
type clientGoElector struct {
	id      string
	cancel  context.CancelFunc
	done    chan struct{}
	leading atomic.Bool
}

// startClientGo runs a client-go elector with identity id on the Lease
// name in "default". release says whether it releases when stopped
// (ReleaseOnCancel); without, stopping it is a crash: it stops renewing
// and writes nothing. Its leadership goes into rec from the moment its
// callback runs until the moment it is stopped or its callback says it
// stopped, whichever comes first.
func startClientGo(t *testing.T, name, id string, release bool, rec *electiontesting.Recorder) *clientGoElector {
	t.Helper()
	return startClientGoTimed(t, name, id, release, rec, ioLease, ioRenew, ioRetry)
}

// startClientGoTimed is startClientGo with the elector's LeaseDuration,
// RenewDeadline and RetryPeriod.
func startClientGoTimed(t *testing.T, name, id string, release bool, rec *electiontesting.Recorder, lease, renew, retry time.Duration) *clientGoElector {
	t.Helper()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: "default"},
		Client:     newClient(t).CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	c := &clientGoElector{id: id, done: make(chan struct{})}
	var once sync.Once
	stopped := func() {
		once.Do(func() {
			c.leading.Store(false)
			rec.Observe(fxelection.Event{Kind: fxelection.EventStoppedLeading, Identity: id})
		})
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
		ReleaseOnCancel: release, Name: name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				c.leading.Store(true)
				rec.Observe(fxelection.Event{Kind: fxelection.EventStartedLeading, Identity: id})
			},
			OnStoppedLeading: stopped,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = func() {
		stopped() // it stops believing the moment its context ends
		cancel()
	}
	go func() {
		defer close(c.done)
		le.Run(ctx)
	}()
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *clientGoElector) stop() {
	c.cancel()
	<-c.done
}

// waitFor polls cond until it holds or limit passes.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// never checks that cond stays false for d.
func never(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			t.Fatalf("%s", what)
		}
	}
}

// TestClientGoInterop: an fxelection elector and client-go's
// LeaderElector on the same Lease never both lead; each takes a released
// Lease from the other, and each takes over when the other stops renewing
// (a crash) after the lease's duration.
func TestClientGoInterop(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	name := fmt.Sprintf("interop-%d", time.Now().UnixNano()%1e9)
	rec := &electiontesting.Recorder{}
	newFx := func(id string) (*fxelection.Elector, *faultinject.Backend) {
		f := faultinject.New(newBackend(t, kubelease.Options{}))
		e, err := fxelection.New(fxelection.Config{
			Name: name, Identity: id, Timing: fxelection.Timing{
				LeaseDuration: ioLease,
				RenewDeadline: ioRenew,
				RetryPeriod:   ioRetry,
			},
		}, f)
		if err != nil {
			t.Fatal(err)
		}
		e.AddObserver(rec)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		return e, f
	}

	// client-go leads first; fxelection waits.
	b := startClientGo(t, name, "cg-b", true, rec)
	waitFor(t, "client-go leads", 30*time.Second, b.leading.Load)
	a, fa := newFx("fx-a")
	never(t, "fxelection led while client-go held the Lease", 2*ioLease, a.IsLeader)

	// client-go releases (ReleaseOnCancel): fxelection takes it, pushed
	// by the watch.
	b.stop()
	took := waitFor(t, "fxelection takes the Lease client-go released", ioRetry*12/10+ioSlack, a.IsLeader)
	t.Logf("client-go released, fxelection led %v later", took)

	// A new client-go elector waits while fxelection leads...
	c := startClientGo(t, name, "cg-c", false, rec)
	never(t, "client-go led while fxelection held the Lease", 2*ioLease, c.leading.Load)
	// ...and takes the Lease fxelection releases at its next retry.
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	took = waitFor(t, "client-go takes the Lease fxelection released", ioRetry*12/10+ioSlack, c.leading.Load)
	t.Logf("fxelection released, client-go led %v later", took)

	// client-go crashes (stops renewing, releases nothing): a new
	// fxelection elector takes over after the lease's duration.
	d, fd := newFx("fx-d")
	never(t, "fxelection led while client-go renewed", ioLease, d.IsLeader)
	crashed := time.Now()
	c.stop()
	took = waitFor(t, "fxelection takes over from a crashed client-go", ioLease+ioRetry*24/10+ioSlack, d.IsLeader)
	t.Logf("client-go crashed, fxelection led %v later (lease %v)", time.Since(crashed), ioLease)
	_ = took

	// fxelection is cut off (as a crash): client-go takes over.
	e := startClientGo(t, name, "cg-e", true, rec)
	never(t, "client-go led while fxelection renewed", ioLease, e.leading.Load)
	fd.Partition(true)
	cut := time.Now()
	waitFor(t, "client-go takes over from a cut-off fxelection", ioLease+ioRenew+ioRetry*24/10+ioSlack, e.leading.Load)
	t.Logf("fxelection cut off, client-go led %v later", time.Since(cut))
	_ = fa

	if x, y, found := rec.Overlap(); found {
		t.Fatalf("two leaders at once: %+v and %+v (all: %+v)", x, y, rec.Intervals())
	}
}
