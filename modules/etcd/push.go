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
// outside) through any client, and (spuriously) for every election each
// time the watch is (re)established, since a deletion may have been missed
// while it was down. All subscriptions share one etcd watch on the key
// prefix, owned by a goroutine that the first Subscribe starts and the last
// cancel stops (backendkit.WakeHub); cancel returns after wake can no longer
// be called. wake must not block or call back into the Backend. With
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

// listen runs the watch until ctx is done. The watch requires an etcd
// leader (clientv3.WithRequireLeader), so a member cut off from the
// majority ends it instead of staying silent; it only reports deletions
// (clientv3.WithFilterPut). Whenever the watch ends — no leader, its
// revision compacted, the stream broken — it is opened again at the current
// revision after a backoff, and every subscriber is woken once it is
// established.
func (b *Backend) listen(ctx context.Context, hub *backendkit.WakeHub) {
	failures := 0
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		ch := b.client.Watch(wctx, b.prefix, clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
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
				if ev.Type == mvccpb.Event_DELETE && ev.Kv != nil {
					if election, ok := strings.CutPrefix(string(ev.Kv.Key), b.prefix); ok {
						hub.Wake(election)
					}
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
