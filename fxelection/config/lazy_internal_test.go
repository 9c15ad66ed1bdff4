package config

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// slowBackend is a non-batching backend whose Renew of election "hung"
// blocks until release is closed, ignoring its context, and whose Renew of
// "boom" panics.
type slowBackend struct {
	*memory.Backend
	release    chan struct{}
	RenewBatch struct{} // hides MemoryBackend.RenewBatch: this backend does not batch
}

func (b slowBackend) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	switch l.Election {
	case "hung":
		<-b.release
		return fxelection.Lease{}, errors.New("too late")
	case "boom":
		panic("secret-in-panic")
	}
	return b.MemoryBackend.Renew(ctx, l)
}

// TestLazyRenewBatchFallback: on a backend without RenewBatch, each lease
// gets Renew's own outcome, in order; a renewal the backend leaves hanging
// gets the batch context's error without holding up the others; a panic is
// that lease's error and quotes nothing.
func TestLazyRenewBatchFallback(t *testing.T) {
	mem := memory.New()
	sb := slowBackend{MemoryBackend: mem, release: make(chan struct{})}
	ctx := context.Background()
	var held []fxelection.Lease
	for _, name := range []string{"a", "hung", "boom", "b"} {
		l, err := mem.Acquire(ctx, backendkit.AcquireRequest{Election: name, Identity: "me", Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	lost := held[3]
	lost.Holder = "someone-else"
	leases := append(held, lost)

	l := &lazyBackend{kind: "slow"}
	for i, r := range l.RenewBatch(ctx, leases) {
		if !errors.Is(r.Err, ErrNotProvisioned) {
			t.Errorf("lease %d before provisioning: %v, want ErrNotProvisioned", i, r.Err)
		}
	}
	if _, ok := fxelection.Backend(sb).(backendkit.BatchRenewer); ok {
		t.Fatal("slowBackend batches")
	}
	l.set(sb)
	defer close(sb.release) // ends the hung renewal's goroutine
	bctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	res := l.RenewBatch(bctx, leases)
	if len(res) != len(leases) {
		t.Fatalf("%d results for %d leases", len(res), len(leases))
	}
	for _, i := range []int{0, 3} {
		if res[i].Err != nil || res[i].Lease.Election != leases[i].Election || res[i].Lease.Term != leases[i].Term {
			t.Errorf("lease %d: %+v, want renewed", i, res[i])
		}
	}
	if !errors.Is(res[1].Err, context.DeadlineExceeded) {
		t.Errorf("hung lease: %v, want the batch context's deadline", res[1].Err)
	}
	if !errors.Is(res[2].Err, errRenewPanicked) || errors.Is(res[2].Err, context.DeadlineExceeded) {
		t.Errorf("panicking lease: %v, want errRenewPanicked", res[2].Err)
	}
	if !errors.Is(res[4].Err, backendkit.ErrLeaseLost) {
		t.Errorf("lease of another identity: %v, want ErrLeaseLost", res[4].Err)
	}

	// A batching backend gets the batch whole.
	l.set(mem)
	res = l.RenewBatch(ctx, []fxelection.Lease{held[0], lost})
	if res[0].Err != nil || !errors.Is(res[1].Err, backendkit.ErrLeaseLost) {
		t.Errorf("forwarded batch: %+v", res)
	}
}
