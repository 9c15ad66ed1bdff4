package s3lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// TestReleaseAfterLateRenewal: a renewal whose reply the holder never saw
// (Stop cut it short, the store applied it) leaves the holder with the
// previous ETag; Release of that lease still ends the leadership, so the
// next candidate need not wait for it to expire. A stale lease of another
// term releases nothing.
func TestReleaseAfterLateRenewal(t *testing.T) {
	opts := s3lease.Options{Bucket: newBucket(t)}
	b := newBackend(t, opts)
	ctx := ctxT(t)
	e := electiontesting.Election(t)
	l, err := b.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Renew(ctx, l); err != nil { // the "late" renewal: l's ETag is now stale
		t.Fatal(err)
	}
	stale := l
	stale.Term++
	if err := b.Release(ctx, stale); err != nil {
		t.Fatalf("Release of another term: %v", err)
	}
	if _, err := newBackend(t, opts).Get(ctx, e); err != nil {
		t.Fatalf("after releasing another term: %v, want the lease still held", err)
	}
	if err := b.Release(ctx, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := newBackend(t, opts).Get(ctx, e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after Release with the pre-renewal ETag: %v, want ErrNoLease", err)
	}
}
