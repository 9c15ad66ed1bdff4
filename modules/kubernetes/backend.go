package kubelease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// writeAttempts is how many read-decide-write rounds Acquire makes when its
// optimistic updates keep losing races.
const writeAttempts = 4

// Backend is the Kubernetes implementation of fxelection.Backend (and
// backendkit.Notifier and backendkit.Transferer), on coordination.k8s.io/v1
// Lease objects. It is safe for concurrent use. Each Backend has its own
// expiry tracker: the observations that allow a takeover belong to the
// candidate (process) that made them.
type Backend struct {
	leases  coordclient.LeaseInterface
	ns      string
	sem     chan struct{}
	tracker backendkit.ExpiryTracker
	held    backendkit.HeldRecords // a Lease deleted from outside (see claimed)
	secrets []string
	push    bool
	hub     *backendkit.WakeHub
	log     *slog.Logger

	mu    sync.Mutex
	names map[string]map[string]int // Lease name → elections subscribed under it → subscriptions

	refusal refusal // the watch refused by the API server, reported once
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Notifier     = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
)

// New returns a Backend storing leases as Lease objects in opts.Namespace
// through client, which the caller owns (with its rate limiter: client-go's
// default of 5 requests per second is too low for more than a handful of
// elections; see the package documentation). It validates opts and does no
// I/O.
func New(client kubernetes.Interface, opts Options) (*Backend, error) {
	if client == nil {
		return nil, errors.New("kubelease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	b := &Backend{
		leases: client.CoordinationV1().Leases(opts.namespace()),
		ns:     opts.namespace(),
		sem:    make(chan struct{}, opts.maxInFlight()),
		push:   !opts.DisablePush,
		log:    opts.logger(),
		names:  map[string]map[string]int{},
	}
	b.hub = backendkit.NewWakeHub(b.listen)
	return b, nil
}

// BackendName returns "kubernetes".
func (b *Backend) BackendName() string { return "kubernetes" }

// Namespace returns the namespace of the Backend's Lease objects.
func (b *Backend) Namespace() string { return b.ns }

// Close stops push wake-up for good. The Backend stays usable without it.
// It does not close the client.
func (b *Backend) Close() error {
	b.hub.Close()
	return nil
}

// call runs f with one of the Backend's in-flight slots, waiting for one
// within ctx.
func (b *Backend) call(ctx context.Context, f func() error) error {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.sem }()
	return f()
}

// read returns election's Lease object and what it says; found is false
// when there is none.
func (b *Backend) read(ctx context.Context, election string) (obj *coordv1.Lease, s state, found bool, err error) {
	err = b.call(ctx, func() error {
		var e error
		obj, e = b.leases.Get(ctx, LeaseName(election), metav1.GetOptions{})
		return e
	})
	switch {
	case apierrors.IsNotFound(err):
		if !b.held.Vanished(election) {
			b.tracker.Forget(election)
		}
		return nil, state{}, false, nil
	case err != nil:
		b.tracker.Forget(election)
		return nil, state{}, false, err
	}
	s, err = decode(obj, election)
	if err != nil {
		b.tracker.Forget(election)
		return nil, state{}, true, err
	}
	s.cur.Lease.Version = version(obj.ResourceVersion, s.nonce)
	b.held.Saw(election, s.cur)
	return obj, s, true, nil
}

// claimed is what Acquire decides on over a read: the record and whether
// there is one, as backendkit.Claim takes them, and the observed-time
// test of the record. A Lease that is absent after this Backend read it
// held was deleted from outside (the backend never deletes one, nor does
// client-go): backendkit.HeldRecords decides on its absence.
func (b *Backend) claimed(election, identity string, s state, found bool) (cur backendkit.Value, exists bool, expired func() bool) {
	if !found {
		return b.held.Absent(&b.tracker, election, identity)
	}
	return s.cur, true, func() bool {
		return b.tracker.Expired(election, s.cur.Lease.Version, s.nonce, s.cur.Lease.Duration)
	}
}

// version is a Lease.Version: the object's resourceVersion and the nonce
// of the write it holds. The holder is matched on the nonce (own), so
// that an edit of the object's metadata (a label) does not cost it the
// lease; every write is still conditioned on the resourceVersion read.
func version(rv, nonce string) string { return rv + "/" + nonce }

// versionNonce is the nonce part of a Lease.Version.
func versionNonce(v string) string {
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		return v[i+1:]
	}
	return ""
}

// written is the Version of obj as just written with resourceVersion rv.
func written(obj *coordv1.Lease, election, rv string) (string, error) {
	s, err := decode(obj, election)
	if err != nil {
		return "", err
	}
	return version(rv, s.nonce), nil
}

// write creates obj (when create) or updates it on its resourceVersion,
// and returns the new resourceVersion.
func (b *Backend) write(ctx context.Context, obj *coordv1.Lease, create bool) (string, error) {
	var out *coordv1.Lease
	err := b.call(ctx, func() error {
		var e error
		if create {
			out, e = b.leases.Create(ctx, obj, metav1.CreateOptions{})
		} else {
			out, e = b.leases.Update(ctx, obj, metav1.UpdateOptions{})
		}
		return e
	})
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

// lostRace reports whether err says an optimistic write lost: the object
// changed (409 Conflict), was created meanwhile, or was deleted.
func lostRace(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// Acquire takes req.Election's lease for req.Identity if the Lease is
// absent, released, held by req.Identity, or observed unchanged by this
// Backend for its full duration (observed time, as client-go decides);
// see the package documentation. Every write is an optimistic update on
// the resourceVersion read: a lost race reads again and decides again.
func (b *Backend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.acquire(ctx, req)
	return l, b.redact(err)
}

func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if req.Election == "" || req.Identity == "" {
		return fxelection.Lease{}, errors.New("acquire lease: empty election or identity")
	}
	for range writeAttempts {
		obj, s, found, err := b.read(ctx, req.Election)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		now := time.Now()
		cur, exists, expired := b.claimed(req.Election, req.Identity, s, found)
		next, err := backendkit.Claim(req, cur, exists, expired, now)
		if err != nil {
			var held *backendkit.HeldError
			if errors.As(err, &held) {
				if refused := b.refusal.take(); refused != nil {
					return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", refused)
				}
				return fxelection.Lease{}, err
			}
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		if !found {
			obj = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName(req.Election), Namespace: b.ns}}
		}
		if err := apply(obj, s, next, false, now); err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		rv, err := b.write(ctx, obj, !found)
		if lostRace(err) {
			continue
		}
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		b.tracker.Forget(req.Election)
		b.held.Forget(req.Election)
		if next.Version, err = written(obj, req.Election, rv); err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		next.Metadata = maps.Clone(req.Metadata)
		return next, nil
	}
	return fxelection.Lease{}, fmt.Errorf("acquire lease: lost %d optimistic-update races in a row", writeAttempts)
}

// own reads lease's Lease object and returns it if it still holds lease's
// leadership: the same holder, incarnation and term in fxelection's record
// and in the spec, not released; with sameWrite, also the write lease's
// Version names (its nonce). Otherwise it returns an error matching
// backendkit.ErrLeaseLost (or a store failure). Renew asks for the same
// write; Release and Transfer do not, so that a renewal of the holder's
// that its client gave up on but the API server applied still ends with
// the leadership.
func (b *Backend) own(ctx context.Context, lease fxelection.Lease, sameWrite bool) (*coordv1.Lease, state, error) {
	if lease.Version == "" || lease.Election == "" {
		return nil, state{}, backendkit.ErrLeaseLost
	}
	obj, s, found, err := b.read(ctx, lease.Election)
	switch {
	case errors.Is(err, backendkit.ErrInvalidRecord):
		return nil, state{}, fmt.Errorf("%w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return nil, state{}, err
	case !found || s.cur.Released || sameWrite && versionNonce(s.cur.Lease.Version) != versionNonce(lease.Version) ||
		s.nonce == "" || s.cur.Lease.Holder != lease.Holder ||
		s.cur.Lease.Incarnation != lease.Incarnation || s.cur.Lease.Term != lease.Term:
		return nil, state{}, backendkit.ErrLeaseLost
	}
	return obj, s, nil
}

// Renew rewrites lease's record and the spec's renewTime (same term) if
// the Lease still holds lease unchanged since the caller's last write;
// otherwise it returns an error matching backendkit.ErrLeaseLost. It costs
// two API requests: a get and an update on its resourceVersion.
func (b *Backend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	l, err := b.renew(ctx, lease)
	return l, b.redact(err)
}

func (b *Backend) renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	obj, s, err := b.own(ctx, lease, true)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	next := lease.Clone()
	next.AcquiredAt = s.cur.Lease.AcquiredAt
	next.ExpiresAt = time.Time{}
	if err := apply(obj, s, next, false, time.Now()); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	rv, err := b.write(ctx, obj, false)
	if lostRace(err) {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if next.Version, err = written(obj, lease.Election, rv); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	return next, nil
}

// Release writes client-go's release (an empty holder) with fxelection's
// record marked released, keeping its term, if the Lease still holds
// lease's leadership (holder, incarnation and term: a later renewal of the
// same leadership is released too); releasing a lease that is no longer
// the caller's returns nil.
// Watchers (push wake-up, and client-go electors at their next retry)
// see the Lease free at once.
func (b *Backend) Release(ctx context.Context, lease fxelection.Lease) error {
	return b.redact(b.release(ctx, lease))
}

func (b *Backend) release(ctx context.Context, lease fxelection.Lease) error {
	for range writeAttempts {
		obj, s, err := b.own(ctx, lease, false)
		if errors.Is(err, backendkit.ErrLeaseLost) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
		if err := apply(obj, s, s.cur.Lease, true, time.Now()); err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
		_, err = b.write(ctx, obj, false)
		if lostRace(err) {
			continue // changed since the read (a late renewal of ours?): read again
		}
		if err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
		b.held.Forget(lease.Election)
		return nil
	}
	return fmt.Errorf("release lease: lost %d optimistic-update races in a row", writeAttempts)
}

// Transfer implements backendkit.Transferer: it ends lease, matched as
// Release matches it (its leadership, not its last write), and in the same update (on the resourceVersion
// read) replaces it with the record Acquire would write for req on a free
// lease: held by req.Identity under req.Incarnation, with req.Metadata,
// for req.Duration, with the next clock-seeded term. A lease that is no
// longer the caller's, or a Lease changed since the read, changes nothing
// and gives an error matching backendkit.ErrLeaseLost.
func (b *Backend) Transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.transfer(ctx, lease, req)
	return l, b.redact(err)
}

func (b *Backend) transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := backendkit.CheckTransfer(lease, req); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	obj, s, err := b.own(ctx, lease, false)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	now := time.Now()
	next, err := backendkit.ClaimTransfer(req, s.cur, now)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	if err := apply(obj, s, next, false, now); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	rv, err := b.write(ctx, obj, false)
	if lostRace(err) {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
	}
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	b.tracker.Forget(req.Election)
	b.held.Forget(req.Election)
	if next.Version, err = written(obj, req.Election, rv); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	next.Metadata = maps.Clone(req.Metadata)
	return next, nil
}

// Get returns election's current holder with Version set to the Lease's
// resourceVersion and its write's nonce and a zero ExpiresAt, or backendkit.ErrNoLease if the
// Lease is absent or released. It changes nothing; like Acquire, it starts
// this Backend's observation of the write it saw.
func (b *Backend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	l, err := b.get(ctx, election)
	return l, b.redact(err)
}

func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	_, s, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	if !found || s.cur.Released {
		return fxelection.Lease{}, backendkit.ErrNoLease
	}
	b.tracker.Expired(election, s.cur.Lease.Version, s.nonce, s.cur.Lease.Duration)
	return s.cur.Lease, nil
}

// redact passes err through backendkit.RedactError with the backend's
// known secrets (the config module's bearer token).
func (b *Backend) redact(err error) error {
	return backendkit.RedactError(err, b.secrets...)
}
