package s3lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// BenchmarkAcquireHeld is a follower's poll: one GET.
func BenchmarkAcquireHeld(b *testing.B) {
	a, f, e := newBackend(b, s3lease.Options{}), newBackend(b, s3lease.Options{}), electiontest.Election(b)
	if _, err := a.Acquire(context.Background(), req(e, "a", time.Hour)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := f.Acquire(context.Background(), req(e, "f", time.Hour)); err == nil {
			b.Fatal("acquired a held lease")
		}
	}
}

// BenchmarkRenew is a leader's renewal: one GET and one conditional PUT.
func BenchmarkRenew(b *testing.B) {
	a, e := newBackend(b, s3lease.Options{}), electiontest.Election(b)
	l, err := a.Acquire(context.Background(), req(e, "a", time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if l, err = a.Renew(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet is one GET.
func BenchmarkGet(b *testing.B) {
	a, e := newBackend(b, s3lease.Options{}), electiontest.Election(b)
	if _, err := a.Acquire(context.Background(), req(e, "a", time.Hour)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := a.Get(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAcquireRelease is a full hand-over cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	a, e := newBackend(b, s3lease.Options{}), electiontest.Election(b)
	for b.Loop() {
		l, err := a.Acquire(context.Background(), req(e, "a", time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Release(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}
