package etcdlease

import (
	"context"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// pushMinBackoff and pushMaxBackoff bound the wait before the watch is
// opened again after it ended with an error (no leader, compaction, a
// closed stream).
const (
	pushMinBackoff = 50 * time.Millisecond
	pushMaxBackoff = 2 * time.Second
)

// Subscribe implements backendkit.Notifier: wake is called when election's
// key is deleted (released, expired with its etcd lease, or deleted from
// outside) or a put starts a new leadership on the live key (a Transfer,
// or a new incarnation of the holder taking its own record over) through
// any client, and (spuriously) for every election each time the watch is
// (re)established, since a change may have been missed while it was down.
// Puts that continue a leadership (a renewal or re-acquisition stating its
// term) and puts on an absent key (an acquisition after a deletion, which
// woke the subscribers already) wake no one. All subscriptions share one
// etcd watch on the key prefix, owned by a goroutine that the first
// Subscribe starts and the last cancel stops (backendkit.WakeHub); cancel
// returns after wake can no longer be called. wake must not block or call
// back into the Backend. With Options.DisablePush, Subscribe does nothing.
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

// listen runs the watch until ctx is done. The watch requires an etcd
// leader (clientv3.WithRequireLeader), so a member cut off from the
// majority ends it instead of staying silent; it reports deletions and
// puts, and wakes an election for a deletion and for a put that starts a
// new leadership on a live key (wakesFor). Whenever the watch ends — no
// leader, its revision compacted, the stream broken — it is opened again
// at the current revision after a backoff, and every subscriber is woken
// once it is established.
func (b *Backend) listen(ctx context.Context, hub *backendkit.WakeHub) {
	failures := 0
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		ch := b.client.Watch(wctx, b.prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		for resp := range ch {
			if resp.Err() != nil {
				break
			}
			if resp.Created {
				failures = 0
				hub.WakeAll()
				continue
			}
			for _, ev := range resp.Events {
				if ev.Kv == nil {
					continue
				}
				if election, ok := strings.CutPrefix(string(ev.Kv.Key), b.prefix); ok && wakesFor(election, ev) {
					hub.Wake(election)
				}
			}
		}
		cancel()
		// Drain what the cancelled watch still delivers so it can close.
		for range ch {
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, pushMinBackoff, pushMaxBackoff)) {
			return
		}
	}
}

// wakesFor reports whether ev, an event on election's key, wakes the
// election's subscribers: a deletion does, and so does a put that starts a
// new leadership on a key that was live (its create revision is older than
// the put): a valid record whose value states no term, so its term is the
// put's own revision. That is a Transfer (the successor's record replacing
// the caller's in one step, with no deletion to wake anyone), or a new
// incarnation of the holder taking its own record over. A put on an absent
// key follows a deletion that woke the subscribers already; a put stating
// its term continues a leadership; a foreign value is no lease.
func wakesFor(election string, ev *clientv3.Event) bool {
	switch ev.Type {
	case mvccpb.Event_DELETE:
		return true
	case mvccpb.Event_PUT:
		if ev.Kv.CreateRevision >= ev.Kv.ModRevision {
			return false
		}
		l, err := decodeKV(election, ev.Kv)
		return err == nil && l.Term == uint64(ev.Kv.ModRevision)
	}
	return false
}
