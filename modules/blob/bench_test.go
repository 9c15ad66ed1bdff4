package bloblease_test

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// BenchmarkAcquireHeld is a follower's poll: two reads.
func BenchmarkAcquireHeld(b *testing.B) {
	a, f, e := newBackend(b, bloblease.Options{}), newBackend(b, bloblease.Options{}), electiontest.Election(b)
	if _, err := a.Acquire(context.Background(), req(e, "a", time.Minute)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := f.Acquire(context.Background(), req(e, "f", time.Minute)); err == nil {
			b.Fatal("acquired a held lease")
		}
	}
}

// BenchmarkRenew is a leader's renewal: a lease request and a read.
func BenchmarkRenew(b *testing.B) {
	a, e := newBackend(b, bloblease.Options{}), electiontest.Election(b)
	l, err := a.Acquire(context.Background(), req(e, "a", time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if l, err = a.Renew(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet is two reads.
func BenchmarkGet(b *testing.B) {
	a, e := newBackend(b, bloblease.Options{}), electiontest.Election(b)
	if _, err := a.Acquire(context.Background(), req(e, "a", time.Minute)); err != nil {
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
	a, e := newBackend(b, bloblease.Options{}), electiontest.Election(b)
	for b.Loop() {
		l, err := a.Acquire(context.Background(), req(e, "a", time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Release(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}
