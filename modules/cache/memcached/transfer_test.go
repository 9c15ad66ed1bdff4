package memcachedlease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestTransferTTL: the hint a Transfer writes expires by memcached's TTL
// for the request's duration, as Acquire's record would, not the
// transferred lease's; a request for a duration memcached cannot express
// is refused before anything is written, and the lease stays the caller's.
func TestTransferTTL(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	a := newBackend(t, srv.Addr(), cachelease.Options{})
	other := newBackend(t, srv.Addr(), cachelease.Options{})
	ctx := ctxT(t)
	e := electionName(t)
	l, err := a.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Transfer(ctx, l, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: 31 * 24 * time.Hour}); !errors.Is(err, cachelease.ErrTTLRange) {
		t.Fatalf("Transfer to a 31-day hint: %v, want ErrTTLRange", err)
	}
	if got, err := other.Get(ctx, e); err != nil || got.Holder != "a" || got.Term != l.Term || got.Version != l.Version {
		t.Fatalf("after a refused Transfer the store holds %+v (%v), want a's lease unchanged", got, err)
	}
	const d = time.Second
	hint, err := a.Transfer(ctx, l, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Get(ctx, e); err != nil || got.Holder != "b" || got.Term != hint.Term || got.Version != hint.Version {
		t.Fatalf("after Transfer the store holds %+v (%v), want b's hint %+v", got, err, hint)
	}
	// Stored with expiration ceil(d)+1 s: gone within d + 2s.
	electiontesting.WaitFor(t, d+2*time.Second+3*time.Second, "the hint to expire", func() bool {
		_, err := other.Get(ctx, e)
		return errors.Is(err, backendkit.ErrNoLease)
	})
	if _, err := a.Transfer(ctx, hint, backendkit.AcquireRequest{Election: e, Identity: "c", Duration: d}); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of an expired hint: %v, want ErrLeaseLost", err)
	}
	if _, err := other.Get(ctx, e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("a refused Transfer of an expired lease wrote something: %v", err)
	}
}
