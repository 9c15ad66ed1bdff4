package redislease

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
)

// counter counts wake calls.
type counter struct{ n atomic.Int64 }

func (c *counter) wake()        { c.n.Add(1) }
func (c *counter) count() int64 { return c.n.Load() }

func numSub(t *testing.T, b *Backend) int64 {
	t.Helper()
	res, err := b.client.PubSubNumSub(ctxT(t), b.WakeChannel()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return res[b.WakeChannel()]
}

func pumpRunning(b *Backend) bool { return b.hub.Listening() }

// releaseNow acquires and releases election through b, which publishes.
func releaseNow(t *testing.T, b *Backend, election string) {
	t.Helper()
	release(t, b, acquire(t, b, election, "releaser"))
}

// TestPushSharedSubscription: one pub/sub connection per Backend whatever
// the number of elections; a release wakes only that election's
// subscribers; the connection closes with the last cancel.
func TestPushSharedSubscription(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	other := newBackend(t, srv.Addr(), Options{})
	e1, e2 := electionName(t)+"-1", electionName(t)+"-2"
	var w1a, w1b, w2 counter
	cancels := []func(){b.Subscribe(e1, w1a.wake), b.Subscribe(e1, w1b.wake), b.Subscribe(e2, w2.wake)}
	electiontesting.WaitFor(t, electiontesting.Eventually, "one subscription on the server", func() bool { return numSub(t, other) == 1 })
	// The (re)subscription wakes everyone once; wait for it to pass.
	electiontesting.WaitFor(t, electiontesting.Eventually, "the subscription wake-up", func() bool { return w2.count() >= 1 })
	base1a, base1b, base2 := w1a.count(), w1b.count(), w2.count()

	releaseNow(t, other, e1)
	electiontesting.WaitFor(t, electiontesting.Eventually, "both e1 subscribers woken", func() bool {
		return w1a.count() > base1a && w1b.count() > base1b
	})
	if w2.count() != base2 {
		t.Errorf("e2's subscriber was woken by e1's release")
	}
	if numSub(t, other) != 1 {
		t.Errorf("%d subscriptions on the server, want 1", numSub(t, other))
	}
	for _, c := range cancels {
		c()
		c() // idempotent
	}
	if pumpRunning(b) {
		t.Fatal("pub/sub goroutine still running after the last cancel")
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "no subscription on the server", func() bool { return numSub(t, other) == 0 })
	// A new subscription starts it again.
	var again counter
	cancel := b.Subscribe(e1, again.wake)
	defer cancel()
	electiontesting.WaitFor(t, electiontesting.Eventually, "a subscription again", func() bool { return numSub(t, other) == 1 })
	electiontesting.WaitFor(t, electiontesting.Eventually, "a wake-up after re-subscribing", func() bool { return again.count() > 0 })
}

// TestPushNoWakeAfterCancel: once cancel returns, wake is never called,
// even while releases are being published.
func TestPushNoWakeAfterCancel(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	publisher := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	keep := b.Subscribe(e, func() {}) // keeps the connection up
	defer keep()
	ctx := ctxT(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := publisher.client.Publish(ctx, publisher.WakeChannel(), e).Err(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var late atomic.Int64
	for range 200 {
		var cancelled atomic.Bool
		cancel := b.Subscribe(e, func() {
			if cancelled.Load() {
				late.Add(1)
			}
		})
		time.Sleep(time.Millisecond)
		cancel()
		cancelled.Store(true)
	}
	close(stop)
	wg.Wait()
	if n := late.Load(); n > 0 {
		t.Fatalf("wake called %d times after cancel returned", n)
	}
}

// TestPushReconnects: the pub/sub connection comes back after the server
// is killed and restarted, wakes every subscriber once it is back (a
// release may have been missed), and delivers releases again.
func TestPushReconnects(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	other := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	var w counter
	cancel := b.Subscribe(e, w.wake)
	defer cancel()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the first subscription", func() bool { return w.count() >= 1 })
	before := w.count()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up after re-subscribing", func() bool { return w.count() > before })
	electiontesting.WaitFor(t, electiontesting.Eventually, "the subscription on the new server", func() bool { return numSub(t, other) == 1 })
	before = w.count()
	releaseNow(t, other, e)
	electiontesting.WaitFor(t, electiontesting.Eventually, "a release delivered after the restart", func() bool { return w.count() > before })
}

// TestPushReplacesSilentConnection: a pub/sub connection that stops
// answering (here: CLIENT PAUSE) is pinged, then replaced, and releases are
// delivered again afterwards.
func TestPushReplacesSilentConnection(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	b.health = 100 * time.Millisecond
	admin := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	var w counter
	cancel := b.Subscribe(e, w.wake)
	defer cancel()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the first subscription", func() bool { return w.count() >= 1 })
	pubsubIDs := func() string {
		list, err := admin.client.Do(ctxT(t), "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range strings.Fields(list) {
			if strings.HasPrefix(f, "id=") {
				ids = append(ids, f)
			}
		}
		return strings.Join(ids, ",")
	}
	first := pubsubIDs()
	if err := admin.client.Do(ctxT(t), "CLIENT", "PAUSE", 1000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	// While paused (ignoring pings) the connection is replaced; after the
	// pause the new connection subscribes and wakes everyone.
	before := w.count()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up after re-subscribing", func() bool { return w.count() > before })
	if now := pubsubIDs(); now == first || now == "" {
		t.Fatalf("pub/sub connection not replaced: before %q, after %q", first, now)
	}
	before = w.count()
	releaseNow(t, admin, e)
	electiontesting.WaitFor(t, electiontesting.Eventually, "a release delivered on the new connection", func() bool { return w.count() > before })
}

// TestDisablePush: Subscribe does nothing and opens no connection, but
// Release still publishes for others.
func TestDisablePush(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	quiet := newBackend(t, srv.Addr(), Options{DisablePush: true})
	listener := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	var wq, wl counter
	cancelQ := quiet.Subscribe(e, wq.wake)
	defer cancelQ()
	if pumpRunning(quiet) {
		t.Fatal("DisablePush started a pub/sub connection")
	}
	cancelL := listener.Subscribe(e, wl.wake)
	defer cancelL()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listener's subscription", func() bool { return wl.count() >= 1 })
	before := wl.count()
	releaseNow(t, quiet, e)
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listener woken by a push-disabled backend's release", func() bool { return wl.count() > before })
	if wq.count() != 0 {
		t.Fatal("a push-disabled backend called wake")
	}
	var _ backendkit.Notifier = quiet
}

// TestCloseStopsPush: Close ends the listener and later subscriptions, and
// leaves the client and the Backend usable.
func TestCloseStopsPush(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	other := newBackend(t, srv.Addr(), Options{})
	var w counter
	cancel := b.Subscribe(electionName(t), w.wake)
	defer cancel()
	electiontesting.WaitFor(t, electiontesting.Eventually, "one subscription on the server", func() bool { return numSub(t, other) == 1 })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if pumpRunning(b) {
		t.Fatal("listener still runs after Close")
	}
	b.Subscribe(electionName(t), w.wake)()
	if pumpRunning(b) {
		t.Fatal("Subscribe after Close started a listener")
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "no subscription on the server", func() bool { return numSub(t, other) == 0 })
	releaseNow(t, b, electionName(t)) // the client still works
	if err := b.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}
