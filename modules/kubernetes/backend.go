package kubelease

import (
	"context"
	"errors"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// Backend is the Kubernetes implementation of fxelection.Backend (and
// backendkit.Notifier and backendkit.Transferer), on coordination.k8s.io/v1
// Lease objects: the one lease algorithm over a compare-and-swap register
// (caslease) whose records are Lease objects, written as client-go's
// LeaseLock writes them, with a watch for push wake-up. It is safe for
// concurrent use. Each Backend has its own expiry tracker: the
// observations that allow a takeover belong to the candidate (process)
// that made them. Every error it returns leaves through caslease's
// backendkit.Redacting, which passes it through backendkit.RedactError
// once, with the config module's secrets.
type Backend struct {
	*caslease.NotifyingBackend
	leases *leases
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Notifier     = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
	_ caslease.Register       = (*leases)(nil)
	_ caslease.Watcher        = (*leases)(nil)
)

// New returns a Backend storing leases as Lease objects in opts.Namespace
// through client, which the caller owns (with its rate limiter: client-go's
// default of 5 requests per second is too low for more than a handful of
// elections; see the package documentation). It validates opts and does no
// I/O.
func New(client kubernetes.Interface, opts Options) (*Backend, error) {
	return newBackend(client, opts, nil)
}

// newBackend is New with the secrets removed from every error and log
// line (the config module's credentials).
func newBackend(client kubernetes.Interface, opts Options, secrets []string) (*Backend, error) {
	if client == nil {
		return nil, errors.New("kubelease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := &leases{
		api: client.CoordinationV1().Leases(opts.namespace()),
		ns:  opts.namespace(),
	}
	cb, err := caslease.NewNotifying(r, caslease.Options{
		Name: "kubernetes",
		Key:  LeaseName,
		ElectionOf: func(name string) (string, bool) {
			return name, LeaseName(name) == name // a hashed name does not say
		},
		Secrets:      secrets,
		DisablePush:  opts.DisablePush,
		WatchBackoff: caslease.Backoff{Min: watchMinBackoff, Max: watchMaxBackoff},
		MaxInFlight:  opts.maxInFlight(),
		Logger:       opts.logger().With("namespace", opts.namespace()),
	})
	if err != nil {
		return nil, err
	}
	return &Backend{NotifyingBackend: cb, leases: r}, nil
}

// Namespace returns the namespace of the Backend's Lease objects.
func (b *Backend) Namespace() string { return b.leases.ns }

// leases is a namespace's Lease objects as a caslease.Register: a record
// is a Lease (decode, apply), its version the resourceVersion, and every
// write a create or an update on the resourceVersion read.
type leases struct {
	api coordclient.LeaseInterface
	ns  string
}

// Capabilities: observed time (as client-go decides), and a Lease is
// never deleted by this package or by client-go (KeepsRecords).
func (*leases) Capabilities() caslease.Capabilities {
	return caslease.Capabilities{KeepsRecords: true}
}

// Get reads the Lease named key; its State is the object read.
func (r *leases) Get(ctx context.Context, key, election string) (caslease.Entry, error) {
	obj, err := r.api.Get(ctx, key, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return caslease.Entry{}, caslease.ErrNotFound
	case err != nil:
		return caslease.Entry{}, err
	}
	rec, err := decode(obj, election)
	if err != nil {
		return caslease.Entry{}, err
	}
	return caslease.Entry{Record: rec, Version: obj.ResourceVersion, State: obj}, nil
}

// Add creates the Lease named key.
func (r *leases) Add(ctx context.Context, key string, rec caslease.Record, _ time.Duration) (string, error) {
	obj := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: r.ns}}
	return r.write(ctx, obj, rec, true)
}

// CompareAndSwap updates the Lease prev read, on its resourceVersion.
func (r *leases) CompareAndSwap(ctx context.Context, _ string, prev caslease.Entry, rec caslease.Record, _ time.Duration) (string, error) {
	obj, ok := prev.State.(*coordv1.Lease)
	if !ok {
		return "", errors.New("compare-and-swap on an entry this register did not read")
	}
	return r.write(ctx, obj.DeepCopy(), rec, false)
}

// write applies rec to obj and creates it (create) or updates it on its
// resourceVersion, and returns the new resourceVersion. A write that lost
// a race (the object changed: 409 Conflict; was created meanwhile; or was
// deleted) gives caslease.ErrExists or caslease.ErrConflict.
func (r *leases) write(ctx context.Context, obj *coordv1.Lease, rec caslease.Record, create bool) (string, error) {
	if err := apply(obj, rec.Lease, rec.Released, time.Now()); err != nil {
		return "", err
	}
	var out *coordv1.Lease
	var err error
	if create {
		out, err = r.api.Create(ctx, obj, metav1.CreateOptions{})
	} else {
		out, err = r.api.Update(ctx, obj, metav1.UpdateOptions{})
	}
	switch {
	case create && apierrors.IsAlreadyExists(err):
		return "", caslease.ErrExists
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
		return "", caslease.ErrConflict
	case err != nil:
		return "", err
	}
	return out.ResourceVersion, nil
}
