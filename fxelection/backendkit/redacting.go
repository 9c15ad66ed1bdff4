package backendkit

import (
	"context"
	"errors"
	"fmt"
)

// Ops are a backend's operations as its store reports them, errors
// unredacted: what Redacting forwards to. Acquire, Renew, Release and Get
// are required. Transfer may be nil: Redacting.Transfer then returns an
// error matching errors.ErrUnsupported, having changed nothing, as the
// Transferer contract asks of a wrapper whose backend cannot transfer.
// RenewBatch and AcquireBatch are used only through RedactingBatches (see
// NewRedactingBatches), by a backend that implements BatchRenewer and
// BatchAcquirer.
type Ops struct {
	// Acquire is Backend.Acquire.
	Acquire func(ctx context.Context, req AcquireRequest) (Lease, error)
	// Renew is Backend.Renew.
	Renew func(ctx context.Context, lease Lease) (Lease, error)
	// Release is Backend.Release.
	Release func(ctx context.Context, lease Lease) error
	// Get is Backend.Get.
	Get func(ctx context.Context, election string) (Lease, error)
	// Transfer is Transferer.Transfer, or nil.
	Transfer func(ctx context.Context, lease Lease, req AcquireRequest) (Lease, error)
	// RenewBatch is BatchRenewer.RenewBatch, or nil.
	RenewBatch func(ctx context.Context, leases []Lease) []RenewResult
	// AcquireBatch is BatchAcquirer.AcquireBatch, or nil.
	AcquireBatch func(ctx context.Context, reqs []AcquireRequest) []AcquireResult
}

// Redacting is the one path by which errors leave a backend: it implements
// Backend and Transferer by calling a backend's Ops and passing every error
// they return through RedactError with the backend's secrets (its client's
// credentials, as Credentials lists them). A backend package embeds it in
// its exported Backend type and writes its operations as unexported
// methods returning the store's errors as they are, so that no operation
// needs a redaction of its own:
//
//	type Backend struct {
//		backendkit.Redacting // Acquire, Renew, Release, Get, Transfer
//		client *sdk.Client
//	}
//
//	func New(client *sdk.Client) *Backend {
//		b := &Backend{client: client}
//		b.Redacting = backendkit.NewRedacting(backendkit.Ops{
//			Acquire: b.acquire, Renew: b.renew, Release: b.release,
//			Get: b.get, Transfer: b.transfer,
//		}, backendkit.Credentials(client.User(), client.Password())...)
//		return b
//	}
//
// A backend that batches embeds RedactingBatches as well
// (NewRedactingBatches). A backend's other
// methods that reach its store (creating a table) pass their errors
// through Redact.
//
// Why in the backend and not only in the core: callers reach a backend
// without an Elector (locks, pools, watchers, the fxelection command's
// leases subcommands, an application's status handler), and only the
// backend knows its credentials. The Elector still passes every store
// failure through RedactError without secrets, which changes nothing for
// an error that already passed here and covers a backend that does not
// embed Redacting.
//
// Build it with NewRedacting before the Backend is used; it does not
// change afterwards, so it is safe for concurrent use. An operation whose
// Ops function is nil (the zero Redacting) returns an error matching
// ErrNoOperation.
type Redacting struct {
	ops     Ops
	secrets []string
}

// ErrNoOperation is returned by a Redacting operation whose Ops function
// is nil: the backend was not built with NewRedacting, or left it out.
var ErrNoOperation = errors.New("fxelection: backend operation not set (backendkit.Ops)")

// NewRedacting returns the Redacting of a backend with operations ops and
// the given secrets (empty ones are ignored; see RedactText for short
// ones).
func NewRedacting(ops Ops, secrets ...string) Redacting {
	var s []string
	for _, sec := range secrets {
		if sec != "" {
			s = append(s, sec)
		}
	}
	return Redacting{ops: ops, secrets: s}
}

// Redact passes err through RedactError with the backend's secrets: for a
// backend's methods outside the contract that reach its store.
func (r Redacting) Redact(err error) error { return RedactError(err, r.secrets...) }

// Acquire implements Backend: the backend's Acquire, its error redacted.
// The guarantees are the backend's (see its package documentation).
func (r Redacting) Acquire(ctx context.Context, req AcquireRequest) (Lease, error) {
	if r.ops.Acquire == nil {
		return Lease{}, ErrNoOperation
	}
	l, err := r.ops.Acquire(ctx, req)
	return l, r.Redact(err)
}

// Renew implements Backend: the backend's Renew, its error redacted.
func (r Redacting) Renew(ctx context.Context, lease Lease) (Lease, error) {
	if r.ops.Renew == nil {
		return Lease{}, ErrNoOperation
	}
	l, err := r.ops.Renew(ctx, lease)
	return l, r.Redact(err)
}

// Release implements Backend: the backend's Release, its error redacted.
func (r Redacting) Release(ctx context.Context, lease Lease) error {
	if r.ops.Release == nil {
		return ErrNoOperation
	}
	return r.Redact(r.ops.Release(ctx, lease))
}

// Get implements Backend: the backend's Get, its error redacted.
func (r Redacting) Get(ctx context.Context, election string) (Lease, error) {
	if r.ops.Get == nil {
		return Lease{}, ErrNoOperation
	}
	l, err := r.ops.Get(ctx, election)
	return l, r.Redact(err)
}

// Transfer implements Transferer: the backend's Transfer, its error
// redacted, or an error matching errors.ErrUnsupported, having changed
// nothing, when the backend has none.
func (r Redacting) Transfer(ctx context.Context, lease Lease, req AcquireRequest) (Lease, error) {
	if r.ops.Transfer == nil {
		return Lease{}, fmt.Errorf("fxelection: transfer: %w", errors.ErrUnsupported)
	}
	l, err := r.ops.Transfer(ctx, lease, req)
	return l, r.Redact(err)
}

// RedactingBatches implements BatchRenewer and BatchAcquirer for a backend
// built on Redacting: the backend's RenewBatch and AcquireBatch, every
// result's error redacted with the same secrets. An operation whose Ops
// function is nil gives every result ErrNoOperation.
type RedactingBatches struct{ r Redacting }

// NewRedactingBatches returns the batch half of r, for a backend that
// implements BatchRenewer and BatchAcquirer (its Ops have RenewBatch and
// AcquireBatch) to embed beside r.
func NewRedactingBatches(r Redacting) RedactingBatches { return RedactingBatches{r: r} }

// RenewBatch implements BatchRenewer: the backend's RenewBatch, each
// result's error redacted.
func (b RedactingBatches) RenewBatch(ctx context.Context, leases []Lease) []RenewResult {
	if b.r.ops.RenewBatch == nil {
		return failAll[RenewResult](len(leases), func(r *RenewResult) { r.Err = ErrNoOperation })
	}
	out := b.r.ops.RenewBatch(ctx, leases)
	for i := range out {
		out[i].Err = b.r.Redact(out[i].Err)
	}
	return out
}

// AcquireBatch implements BatchAcquirer: the backend's AcquireBatch, each
// result's error redacted.
func (b RedactingBatches) AcquireBatch(ctx context.Context, reqs []AcquireRequest) []AcquireResult {
	if b.r.ops.AcquireBatch == nil {
		return failAll[AcquireResult](len(reqs), func(r *AcquireResult) { r.Err = ErrNoOperation })
	}
	out := b.r.ops.AcquireBatch(ctx, reqs)
	for i := range out {
		out[i].Err = b.r.Redact(out[i].Err)
	}
	return out
}

// failAll returns n results, each set by fail.
func failAll[R any](n int, fail func(*R)) []R {
	out := make([]R, n)
	for i := range out {
		fail(&out[i])
	}
	return out
}
