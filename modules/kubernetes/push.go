package kubelease

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// watchMinBackoff and watchMaxBackoff bound the wait before watching
// again after the API server refused or ended the watch
// (caslease.Options.WatchBackoff): a refused watch is retried at most
// every 5 s, plus jitter.
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
// reported again (caslease.ErrWatchRefused, which it matches).
var ErrWatchRefused = fmt.Errorf("kubelease: the API server refused the watch on leases; push wake-up is off and followers poll (%w)", caslease.ErrWatchRefused)

// errWatchEnded is what Watch returns when the API server ended the
// watch (a timeout, 410 Gone) or the connection broke: caslease.Backend
// watches again after a backoff.
var errWatchEnded = errors.New("the API server ended the watch on leases")

// Watch implements caslease.Watcher with one watch on the namespace's
// Leases (prefix is ""): every Lease written is decoded (decodeAny) and
// every Lease deleted reported, so that caslease.Backend wakes the
// subscribers of an election whose Lease was released (by fxelection or
// by a client-go elector), deleted or handed to another holder, but not
// renewed. Without a resourceVersion the watch starts at the present, with
// an ADDED event per existing Lease. A watch the API server refuses is
// reported once (ErrWatchRefused).
func (r *leases) Watch(ctx context.Context, _ string, ready func(), change func(caslease.Change)) error {
	w, err := r.api.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return fmt.Errorf("%w: %w", ErrWatchRefused, err) // reported once by caslease
	} else if err != nil {
		return err
	}
	defer w.Stop()
	ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, open := <-w.ResultChan():
			if !open {
				return errWatchEnded
			}
			obj, isLease := ev.Object.(*coordv1.Lease)
			switch {
			case !isLease && ev.Type == watch.Error:
				return errWatchEnded // 410 Gone and the like: start again
			case !isLease:
			case ev.Type == watch.Deleted:
				change(caslease.Change{Key: obj.Name, Deleted: true})
			case ev.Type == watch.Added, ev.Type == watch.Modified:
				rec, err := decodeAny(obj)
				change(caslease.Change{Key: obj.Name, Record: rec, Err: err})
			}
		}
	}
}

// decodeAny decodes a Lease of any election: the election whose Lease
// name is the object's, its own name or the one fxelection's record names.
func decodeAny(obj *coordv1.Lease) (caslease.Record, error) {
	election := obj.Name
	if LeaseName(election) != election {
		v, err := backendkit.UnmarshalValue([]byte(obj.Annotations[AnnotationRecord]), "")
		if err != nil {
			return caslease.Record{}, err
		}
		election = v.Lease.Election
	}
	if LeaseName(election) != obj.Name {
		return caslease.Record{}, fmt.Errorf("%w: a Lease of no election", backendkit.ErrInvalidRecord)
	}
	return decode(obj, election)
}
