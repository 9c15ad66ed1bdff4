package backendkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// leaky is a backend whose operations fail with errors quoting its
// password, as SDK errors may: what Redacting exists for.
type leaky struct {
	backendkit.Redacting
	backendkit.RedactingBatches
}

const leakyPW = "leaky-pw-4f2a"

func newLeaky() *leaky {
	fail := func(op string) error {
		return fmt.Errorf("%s: dial unix /run/%s.sock: %w", op, leakyPW, context.DeadlineExceeded)
	}
	b := &leaky{}
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: func(_ context.Context, req backendkit.AcquireRequest) (backendkit.Lease, error) {
			if req.Identity == "held" {
				return backendkit.Lease{}, &backendkit.HeldError{Holder: backendkit.Lease{Holder: "other", Term: 3}}
			}
			return backendkit.Lease{}, fail("acquire")
		},
		Renew: func(context.Context, backendkit.Lease) (backendkit.Lease, error) {
			return backendkit.Lease{}, fail("renew")
		},
		Release: func(context.Context, backendkit.Lease) error { return fail("release") },
		Get:     func(context.Context, string) (backendkit.Lease, error) { return backendkit.Lease{}, fail("get") },
		Transfer: func(context.Context, backendkit.Lease, backendkit.AcquireRequest) (backendkit.Lease, error) {
			return backendkit.Lease{}, fail("transfer")
		},
		RenewBatch: func(_ context.Context, ls []backendkit.Lease) []backendkit.RenewResult {
			out := make([]backendkit.RenewResult, len(ls))
			for i := range out {
				out[i].Err = fail("renew")
			}
			return out
		},
		AcquireBatch: func(_ context.Context, rs []backendkit.AcquireRequest) []backendkit.AcquireResult {
			out := make([]backendkit.AcquireResult, len(rs))
			for i := range out {
				out[i].Err = fail("acquire")
			}
			return out
		},
	}, leakyPW, "")
	b.RedactingBatches = backendkit.NewRedactingBatches(b.Redacting)
	return b
}

var (
	_ backendkit.Backend       = (*leaky)(nil)
	_ backendkit.Transferer    = (*leaky)(nil)
	_ backendkit.BatchRenewer  = (*leaky)(nil)
	_ backendkit.BatchAcquirer = (*leaky)(nil)
)

// TestRedactingEveryOperation: every error of every operation leaves a
// backend built on Redacting without its secret, still matching what it
// matched.
func TestRedactingEveryOperation(t *testing.T) {
	b := newLeaky()
	ctx := context.Background()
	l := backendkit.Lease{Election: "e", Holder: "a", Term: 1, Duration: time.Minute}
	req := backendkit.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute}
	_, errA := b.Acquire(ctx, req)
	_, errR := b.Renew(ctx, l)
	errL := b.Release(ctx, l)
	_, errG := b.Get(ctx, "e")
	_, errT := b.Transfer(ctx, l, req)
	errs := map[string]error{"Acquire": errA, "Renew": errR, "Release": errL, "Get": errG, "Transfer": errT,
		"RenewBatch": b.RenewBatch(ctx, []backendkit.Lease{l})[0].Err, "AcquireBatch": b.AcquireBatch(ctx, []backendkit.AcquireRequest{req})[0].Err,
		"Redact": b.Redact(errors.New("wrapped " + leakyPW))}
	for op, err := range errs {
		if err == nil || strings.Contains(err.Error(), leakyPW) || !strings.Contains(err.Error(), backendkit.Redacted) {
			t.Errorf("%s: %v: want the secret redacted", op, err)
		}
		if op != "Redact" && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v no longer matches its sentinel", op, err)
		}
	}
	_, err := b.Acquire(ctx, backendkit.AcquireRequest{Election: "e", Identity: "held", Duration: time.Minute})
	var held *backendkit.HeldError
	if !errors.As(err, &held) || held.Holder.Holder != "other" || !errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("held: %v, want the HeldError through", err)
	}
}

// TestRedactingWithoutOps: a Redacting without a Transfer reports it
// unsupported, as the Transferer contract asks of a wrapper; one built
// without NewRedacting fails every operation with ErrNoOperation rather
// than panicking.
func TestRedactingWithoutOps(t *testing.T) {
	ctx := context.Background()
	var zero backendkit.Redacting
	l := backendkit.Lease{Election: "e", Holder: "a", Term: 1, Duration: time.Minute}
	req := backendkit.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute}
	if _, err := zero.Transfer(ctx, l, req); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Transfer without an op: %v, want errors.ErrUnsupported", err)
	}
	_, errA := zero.Acquire(ctx, req)
	_, errR := zero.Renew(ctx, l)
	_, errG := zero.Get(ctx, "e")
	for op, err := range map[string]error{"Acquire": errA, "Renew": errR, "Release": zero.Release(ctx, l), "Get": errG,
		"RenewBatch":   backendkit.NewRedactingBatches(zero).RenewBatch(ctx, []backendkit.Lease{l})[0].Err,
		"AcquireBatch": backendkit.NewRedactingBatches(zero).AcquireBatch(ctx, []backendkit.AcquireRequest{req})[0].Err} {
		if !errors.Is(err, backendkit.ErrNoOperation) {
			t.Errorf("%s on the zero Redacting: %v, want ErrNoOperation", op, err)
		}
	}
}
