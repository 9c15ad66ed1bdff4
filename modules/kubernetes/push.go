package kubelease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Backoff of the watch after it fails or ends early.
const (
	watchMinBackoff = 100 * time.Millisecond
	watchMaxBackoff = 5 * time.Second
)

// ErrWatchRefused is matched by the store failure an Acquire returns, once,
// after the API server refused the Backend's watch on leases (403
// Forbidden: a Role without the watch verb; 401 Unauthorized). The error
// wraps the API server's, which names the missing permission. Push
// wake-up is off until a watch is allowed: followers find a released
// Lease at their next retry instead of within milliseconds. The watch is
// retried with backoff, and the next refusal after a watch that worked is
// reported again.
var ErrWatchRefused = errors.New("kubelease: the API server refused the watch on leases; push wake-up is off and followers poll")

// refusal is the watch refused by the API server, reported once: logged
// when it starts, and returned by the first Acquire that would have told
// its caller that someone else holds the lease (a follower, which is what
// push wake-up is for), so that it reaches the elector's events, OnError
// and log without costing anyone a leadership.
type refusal struct {
	mu      sync.Mutex
	on      bool  // the last watch attempt was refused
	pending error // not yet returned by an Acquire
}

// refused records a refused watch; it reports whether this refusal
// started one (the previous attempt was not refused).
func (r *refusal) refused(err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		return false
	}
	r.on, r.pending = true, fmt.Errorf("%w: %w", ErrWatchRefused, err)
	return true
}

// allowed records an established watch; it reports whether a refusal
// ended.
func (r *refusal) allowed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.on
	r.on, r.pending = false, nil
	return was
}

// take returns the refusal not yet reported to a caller, once.
func (r *refusal) take() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.pending
	r.pending = nil
	return err
}

// Subscribe implements backendkit.Notifier: wake is called when
// election's Lease is released (by fxelection or by a client-go elector),
// deleted, or handed to another holder (Transfer, a takeover), but not
// when its holder renews it; and (spuriously) for every election each
// time the watch is (re)established, since a release may have been missed
// while it was down. All subscriptions share one watch on the namespace's
// Leases, restarted with backoff when the API server ends it (a timeout,
// 410 Gone) or the connection breaks. With Options.DisablePush, Subscribe
// does nothing and followers poll.
func (b *Backend) Subscribe(election string, wake func()) (cancel func()) {
	if !b.push {
		return func() {}
	}
	name := LeaseName(election)
	b.mu.Lock()
	if b.names[name] == nil {
		b.names[name] = map[string]int{}
	}
	b.names[name][election]++
	b.mu.Unlock()
	stop := b.hub.Subscribe(election, wake)
	return func() {
		stop()
		b.mu.Lock()
		defer b.mu.Unlock()
		if m := b.names[name]; m != nil {
			if m[election]--; m[election] <= 0 {
				delete(m, election)
			}
			if len(m) == 0 {
				delete(b.names, name)
			}
		}
	}
}

// elections returns the elections subscribed under Lease name.
func (b *Backend) elections(name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for e := range b.names[name] {
		out = append(out, e)
	}
	return out
}

// listen keeps a watch on the namespace's Leases until ctx is done.
func (b *Backend) listen(ctx context.Context, hub *backendkit.WakeHub) {
	failures := 0
	for {
		ok := b.watchOnce(ctx, hub)
		if ctx.Err() != nil {
			return
		}
		if ok {
			failures = 0
		} else {
			failures++
		}
		if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, watchMinBackoff, watchMaxBackoff)) {
			return
		}
	}
}

// watchOnce runs one watch until it ends; ok reports that it was
// established.
func (b *Backend) watchOnce(ctx context.Context, hub *backendkit.WakeHub) (ok bool) {
	var w watch.Interface
	err := b.call(ctx, func() error {
		var e error
		// Without a resourceVersion the watch starts at the present, with
		// an ADDED event per existing Lease: they set what it has seen.
		w, e = b.leases.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
		return e
	})
	if err != nil {
		if (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) && b.refusal.refused(err) {
			b.log.Warn("kubelease: the API server refused the watch on leases; push wake-up is off and followers poll until it is allowed",
				"namespace", b.ns, "error", b.redact(err).Error())
		}
		return false
	}
	defer w.Stop()
	if b.refusal.allowed() {
		b.log.Info("kubelease: the watch on leases is allowed again; push wake-up is on", "namespace", b.ns)
	}
	hub.WakeAll()                  // releases may have been missed while no watch ran
	holders := map[string]string{} // Lease name → holder this watch last saw
	for {
		select {
		case <-ctx.Done():
			return true
		case ev, open := <-w.ResultChan():
			if !open {
				return true
			}
			obj, isLease := ev.Object.(*coordv1.Lease)
			if !isLease {
				if ev.Type == watch.Error {
					return true // 410 Gone and the like: start again
				}
				continue
			}
			holder := ""
			if obj.Spec.HolderIdentity != nil {
				holder = *obj.Spec.HolderIdentity
			}
			last, seen := holders[obj.Name]
			switch ev.Type {
			case watch.Deleted:
				delete(holders, obj.Name)
				b.wake(hub, obj.Name)
			case watch.Added, watch.Modified:
				holders[obj.Name] = holder
				if ev.Type == watch.Modified && (!seen || last != holder || holder == "") {
					b.wake(hub, obj.Name)
				}
			}
		}
	}
}

func (b *Backend) wake(hub *backendkit.WakeHub, name string) {
	for _, e := range b.elections(name) {
		hub.Wake(e)
	}
}
