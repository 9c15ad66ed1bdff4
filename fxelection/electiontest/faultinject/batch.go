package faultinject

import (
	"context"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// BatchBackend is a Backend that also implements backendkit.BatchRenewer
// and backendkit.BatchAcquirer, so that electors on it in a Group renew
// and acquire in batches. A fault set for backendkit.OpRenew or
// backendkit.OpAcquire (or for all operations) hits a whole batch as it
// would hit one call; each lease or request in a batch counts as one call
// in Calls. Batches go to the wrapped backend's RenewBatch or
// AcquireBatch, or, if it has none, to its Renew or Acquire one at a time.
type BatchBackend struct {
	*Backend
}

var (
	_ backendkit.BatchRenewer  = (*BatchBackend)(nil)
	_ backendkit.BatchAcquirer = (*BatchBackend)(nil)
)

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
	err := f.before(ctx, backendkit.OpRenew)
	f.mu.Lock()
	f.calls[backendkit.OpRenew] += len(leases) - 1
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

// AcquireBatch implements backendkit.BatchAcquirer.
func (f *BatchBackend) AcquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	out := make([]backendkit.AcquireResult, len(reqs))
	if len(reqs) == 0 {
		return out
	}
	err := f.before(ctx, backendkit.OpAcquire)
	f.mu.Lock()
	f.calls[backendkit.OpAcquire] += len(reqs) - 1
	f.mu.Unlock()
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	if ba, ok := f.inner.(backendkit.BatchAcquirer); ok {
		return ba.AcquireBatch(ctx, reqs)
	}
	for i, req := range reqs {
		out[i].Lease, out[i].Err = f.inner.Acquire(ctx, req)
	}
	return out
}
