package faultinject

import (
	"context"

	"github.com/fxelection/fxelection/fxelection"
)

// BatchBackend is a Backend that also implements backendkit.BatchRenewer,
// so that electors on it renew in batches. A fault set for
// fxelection.OpRenew (or for all operations) hits a whole batch as it
// would hit one Renew call; each lease in a batch counts as one call in
// Calls. Batches go to the wrapped backend's RenewBatch, or, if it has
// none, to its Renew one lease at a time.
type BatchBackend struct {
	*Backend
}

var _ backendkit.BatchRenewer = (*BatchBackend)(nil)

// NewBatch wraps inner like New, with batched renewals.
func NewBatch(inner fxelection.Backend) *BatchBackend {
	return &BatchBackend{New(inner)}
}

// RenewBatch implements backendkit.BatchRenewer.
func (f *BatchBackend) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	out := make([]backendkit.RenewResult, len(leases))
	if len(leases) == 0 {
		return out
	}
	err := f.before(ctx, fxelection.OpRenew)
	f.mu.Lock()
	f.calls[fxelection.OpRenew] += len(leases) - 1
	f.mu.Unlock()
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	if br, ok := f.inner.(backendkit.BatchRenewer); ok {
		return br.RenewBatch(ctx, leases)
	}
	for i, l := range leases {
		out[i].Lease, out[i].Err = f.inner.Renew(ctx, l)
	}
	return out
}
