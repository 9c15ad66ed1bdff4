package fxelection

import (
	"context"
	"errors"
	"time"

	"github.com/fxelection/fxelection/fxelection/internal/keeper"
)

// Renewals for lease holders outside the core.
//
// Package lock holds leases that are not elections, each with a
// keeper.Keeper. Its renewals go through the group (keeper.GroupRenewer)
// so that they share round trips with the group's electors and with each
// other: on a backend that renews in batches (backendkit.BatchRenewer)
// every renewal due in the same slot of the electors' grid is sent in one
// RenewBatch call.

func init() {
	keeper.GroupRenewer = func(group any) keeper.Renewer {
		if g, ok := group.(*Group); ok && g != nil {
			return groupRenewer{g}
		}
		return nil
	}
}

// groupRenewer renews leases in a group's batches.
type groupRenewer struct{ g *Group }

// ctxWait makes a context a waitContext for the batcher.
type ctxWait struct{ context.Context }

func (c ctxWait) AfterFunc(f func()) func() bool { return context.AfterFunc(c.Context, f) }

// Renew renews lease as Backend.Renew would: in a batch with the
// renewals of the group's electors and other holders' when the backend
// renews in batches, with one Backend.Renew call otherwise. ctx bounds the
// call and must have a deadline when the backend batches (the batch
// carrying it is bounded by the latest deadline among its renewals); a
// renewal whose ctx ends before its batch answers is given up and returns
// ctx's error. Errors are Renew's: an error matching
// backendkit.ErrLeaseLost means the lease is gone.
func (r groupRenewer) Renew(ctx context.Context, lease Lease) (Lease, error) {
	bt := r.g.batcher()
	deadline, ok := ctx.Deadline()
	if bt == nil || !ok {
		return r.g.backend.Renew(ctx, lease)
	}
	var out Lease
	if err := bt.renew(ctxWait{ctx}, deadline, &lease, &out); err != nil {
		if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return Lease{}, cerr
		}
		return Lease{}, err
	}
	return out, nil
}

// Due returns when a renewal due at due, of a lease renewed every period,
// should be sent: due rounded down to the grid the group's electors renew
// on (period/64 slots on the wall clock) when the backend renews in
// batches, so that it shares their round trips; due itself otherwise. It
// is never later than due.
func (r groupRenewer) Due(due time.Time, period time.Duration) time.Time {
	if r.g.batcher() == nil {
		return due
	}
	return renewSlot(due, period)
}
