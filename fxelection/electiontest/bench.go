package electiontest

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// RunBackendBenchmarks measures a backend's four operations as an elector
// uses them: AcquireHeld (a follower's poll of a lease someone holds),
// Renew (a leader's renewal), Get, and AcquireRelease (one full hand-over
// cycle). d is the lease duration requested (within the backend's limits).
// newBackend returns a separate client on the store under test per call.
func RunBackendBenchmarks(b *testing.B, newBackend func(tb testing.TB) fxelection.Backend, d time.Duration) {
	ctx := context.Background()
	req := func(e, id string) fxelection.AcquireRequest {
		return fxelection.AcquireRequest{Election: e, Identity: id, Duration: d}
	}
	b.Run("AcquireHeld", func(b *testing.B) {
		a, f, e := newBackend(b), newBackend(b), Election(b)
		if _, err := a.Acquire(ctx, req(e, "a")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := f.Acquire(ctx, req(e, "f")); err == nil {
				b.Fatal("acquired a held lease")
			}
		}
	})
	b.Run("Renew", func(b *testing.B) {
		a, e := newBackend(b), Election(b)
		l, err := a.Acquire(ctx, req(e, "a"))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if l, err = a.Renew(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		a, e := newBackend(b), Election(b)
		if _, err := a.Acquire(ctx, req(e, "a")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := a.Get(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AcquireRelease", func(b *testing.B) {
		a, e := newBackend(b), Election(b)
		for b.Loop() {
			l, err := a.Acquire(ctx, req(e, "a"))
			if err != nil {
				b.Fatal(err)
			}
			if err := a.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
