package etcdlease

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/storetest"
)

// TestPushWakesFollower: with a retry period far longer than the test's
// bound, a follower takes over a released lease only thanks to the watch.
func TestPushWakesFollower(t *testing.T) {
	eps := sharedCluster(t).Endpoints()
	storetest.CheckPushHandover(t, newBackend(t, Options{}, eps...), newBackend(t, Options{}, eps...), storetest.PushOptions{
		Retry: 30 * time.Second, Wait: leaderLimit, Handover: 10 * time.Second,
	})
}

// TestPushWakesOnExpiry: etcd deleting an expired lease's key wakes the
// election's subscribers, and only them; cancelling stops the calls and
// the watch goroutine (goleak checks the latter at the end).
func TestPushWakesOnExpiry(t *testing.T) {
	eps := sharedCluster(t).Endpoints()
	b := newBackend(t, Options{}, eps...)
	e := electionName(t)
	var mine, others atomic.Int32
	cancel := b.Subscribe(e, func() { mine.Add(1) })
	cancelOther := b.Subscribe(e+"-other", func() { others.Add(1) })
	defer cancelOther()
	electiontesting.WaitFor(t, leaderLimit, "the watch to be established", func() bool { return mine.Load() > 0 && others.Load() > 0 })
	m0, o0 := mine.Load(), others.Load()
	if _, err := newBackend(t, Options{}, eps...).Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, leaderLimit, "a wake-up when the lease expires", func() bool { return mine.Load() > m0 })
	if others.Load() != o0 {
		t.Errorf("another election's subscriber was woken %d times", others.Load()-o0)
	}
	cancel()
	after := mine.Load()
	if _, err := newBackend(t, Options{}, eps...).Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the lease expires meanwhile
	if mine.Load() != after {
		t.Fatal("wake called after cancel returned")
	}
}

// TestPushDisabled: with DisablePush, Subscribe starts nothing.
func TestPushDisabled(t *testing.T) {
	b := newBackend(t, Options{DisablePush: true}, sharedCluster(t).Endpoints()...)
	cancel := b.Subscribe("x", func() { t.Error("woken with push disabled") })
	if b.hub.Listening() {
		t.Fatal("watch started with push disabled")
	}
	cancel()
}
