package redislease

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/redis/go-redis/v9"
)

const (
	// pushHealthInterval is how long the pub/sub connection may stay silent
	// before it is pinged; a ping unanswered for as long again replaces it.
	pushHealthInterval = 5 * time.Second
	// pushMinBackoff and pushMaxBackoff bound the wait between attempts to
	// reach a server that refuses the pub/sub connection.
	pushMinBackoff = 50 * time.Millisecond
	pushMaxBackoff = 2 * time.Second
)

// Subscribe implements backendkit.Notifier: wake is called when a lease of
// election is released (or transferred) through any Backend with the same
// key prefix, and (spuriously) for every election after the shared pub/sub
// connection (re)subscribes, since a release may have been missed while it
// was down.
// All subscriptions share one pub/sub connection (backendkit.WakeHub): the
// first starts its goroutine and the last cancel stops it; cancel returns
// after wake can no longer be called. wake must not block or call back into
// the Backend (the elector's wake-up only signals a channel). With
// Options.DisablePush, Subscribe does nothing.
func (b *Backend) Subscribe(election string, wake func()) (cancel func()) {
	if !b.push {
		return func() {}
	}
	return b.hub.Subscribe(election, wake)
}

// Close stops push wake-up for good: the listener ends and later Subscribe
// calls do nothing. It never closes the client passed to New (the config
// module closes a client it built, in its Cleanup). It is idempotent and
// returns nil; the Backend stays usable without push.
func (b *Backend) Close() error {
	b.hub.Close()
	return nil
}

// listen reads wake-ups from the pub/sub channel until ctx is done.
// go-redis reconnects and resubscribes after a broken connection; this loop
// paces attempts while the server is unreachable and pings a silent
// connection, replacing it when a ping goes unanswered.
func (b *Backend) listen(ctx context.Context, hub *backendkit.WakeHub) {
	var mu sync.Mutex
	var ps *redis.PubSub
	// Closing the connection is what unblocks a read in progress.
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if ps != nil {
			_ = ps.Close()
		}
	})
	defer stop()
	open := func() *redis.PubSub {
		// Subscribe dials and sends SUBSCRIBE; on failure go-redis keeps
		// the channel and subscribes again when Receive reconnects.
		next := b.client.Subscribe(ctx, b.channel)
		mu.Lock()
		defer mu.Unlock()
		if ps != nil {
			_ = ps.Close()
		}
		ps = next
		if ctx.Err() != nil {
			_ = ps.Close()
			return nil
		}
		return ps
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if ps != nil {
			_ = ps.Close()
		}
	}()

	cur := open()
	failures, unanswered := 0, false
	for cur != nil {
		msg, err := cur.ReceiveTimeout(ctx, b.health)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && failures == 0 {
				if unanswered {
					// The last ping got no answer: the connection is dead
					// without having been closed. Replace it.
					cur, unanswered = open(), false
					continue
				}
				_ = cur.Ping(ctx)
				unanswered = true
				continue
			}
			failures++
			if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, pushMinBackoff, pushMaxBackoff)) {
				return
			}
			continue
		}
		failures, unanswered = 0, false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				hub.WakeAll()
			}
		case *redis.Message:
			hub.Wake(m.Payload)
		}
	}
}
