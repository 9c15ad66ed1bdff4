package zklease

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// pushMinBackoff and pushMaxBackoff bound the wait before a watch is set
// again after setting it failed (connection down, session expired).
const (
	pushMinBackoff = 50 * time.Millisecond
	pushMaxBackoff = 2 * time.Second
)

// watch is one election's push wake-up: its subscribers and the goroutine
// that keeps a ZooKeeper watch on the election's node.
type watch struct {
	subs   map[int]func()
	cancel context.CancelFunc
	done   chan struct{}
}

// Subscribe implements backendkit.Notifier: wake is called when the lease
// znodes under election's node change (a lease znode deleted — released,
// expired, its session expired, deleted from outside — or created: an
// acquisition, a hand-over, a new incarnation), and, spuriously, each time
// the watch is set again after it could not be (a change may have been
// missed meanwhile). Each subscribed election has one ZooKeeper child
// watch, kept by a goroutine that the election's first Subscribe starts and
// its last cancel stops; cancel returns after wake can no longer be
// called. wake must not block or call back into the Backend. With
// Options.DisablePush, or after Close, Subscribe does nothing.
func (b *Backend) Subscribe(election string, wake func()) (cancel func()) {
	if !b.push {
		return func() {}
	}
	b.pushMu.Lock()
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		b.pushMu.Unlock()
		return func() {}
	}
	w := b.watches[election]
	if w == nil {
		ctx, stop := context.WithCancel(context.Background())
		w = &watch{subs: make(map[int]func()), cancel: stop, done: make(chan struct{})}
		b.watches[election] = w
		go b.watchLoop(ctx, election, w)
	}
	id := b.nextSub
	b.nextSub++
	w.subs[id] = wake
	b.pushMu.Unlock()
	return func() {
		b.pushMu.Lock()
		cur := b.watches[election]
		if cur != w {
			b.pushMu.Unlock()
			return
		}
		delete(w.subs, id)
		last := len(w.subs) == 0
		if last {
			delete(b.watches, election)
		}
		b.pushMu.Unlock()
		if last {
			w.cancel()
			<-w.done
		}
	}
}

// wake calls w's subscribers under pushMu, so that none is called after
// its cancel returned.
func (b *Backend) wake(w *watch) {
	b.pushMu.Lock()
	defer b.pushMu.Unlock()
	for _, f := range w.subs {
		f()
	}
}

// watchLoop keeps a child watch on election's node until ctx is done: it
// sets the watch (an existence watch while the node does not exist),
// waits for it to fire and wakes the subscribers, and sets it again. When
// setting it fails it retries after a backoff and wakes the subscribers
// once it is set again.
func (b *Backend) watchLoop(ctx context.Context, election string, w *watch) {
	defer close(w.done)
	dir := b.Path(election)
	failures := 0
	for {
		ch, err := call(ctx, func() (<-chan zk.Event, error) {
			_, _, ch, err := b.conn.ChildrenW(dir)
			if errors.Is(err, zk.ErrNoNode) {
				var ok bool
				ok, _, ch, err = b.conn.ExistsW(dir)
				if err == nil && ok {
					// Created meanwhile: fire at once to set the child watch.
					c := make(chan zk.Event, 1)
					c <- zk.Event{Type: zk.EventNodeCreated}
					ch = c
				}
			}
			return ch, err
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, pushMinBackoff, pushMaxBackoff)) {
				return
			}
			continue
		}
		if failures > 0 {
			failures = 0
			b.wake(w)
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			b.wake(w)
			if ev.Type == zk.EventNotWatching {
				// The session expired or the connection closed: back off
				// before setting the watch again.
				failures++
				if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, pushMinBackoff, pushMaxBackoff)) {
					return
				}
			}
		}
	}
}

// Close stops push wake-up and this Backend's expiry of its leases for
// good, and waits for expiry deletions in flight; later Subscribe calls do
// nothing. Leases it still holds then last until they are released or
// their session ends: call it after the electors using the Backend have
// stopped (they release their leases), and before closing the connection,
// which ends the session and so deletes every ephemeral lease znode of
// it. It never closes the connection passed to New (the config module
// closes one it made, in its Cleanup). It is idempotent and returns nil.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	for p, h := range b.held {
		h.timer.Stop()
		delete(b.held, p)
	}
	b.mu.Unlock()
	b.stop()
	b.reapers.Wait()
	b.pushMu.Lock()
	ws := b.watches
	b.watches = make(map[string]*watch)
	b.pushMu.Unlock()
	for _, w := range ws {
		w.cancel()
		<-w.done
	}
	return nil
}
