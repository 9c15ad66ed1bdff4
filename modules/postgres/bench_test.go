package pglease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

func benchBackend(b *testing.B) *pglease.Backend {
	be, _ := newBackend(b, dsn(b), "bench", pglease.Options{})
	if err := be.CreateTable(context.Background()); err != nil {
		b.Fatal(err)
	}
	return be
}

// BenchmarkAcquire measures one Acquire statement: a follower's poll of a
// held lease (refused, the common case), the holder re-acquiring its own
// lease, and taking a free lease (each iteration is Acquire + Release).
func BenchmarkAcquire(b *testing.B) {
	ctx := context.Background()
	be := benchBackend(b)
	e := election(b)
	holder := fxelection.AcquireRequest{Election: e, Identity: "holder", Duration: time.Minute, Metadata: map[string]string{"addr": "10.0.0.1:8080"}}
	if _, err := be.Acquire(ctx, holder); err != nil {
		b.Fatal(err)
	}
	b.Run("held", func(b *testing.B) {
		req := holder
		req.Identity = "follower"
		for b.Loop() {
			if _, err := be.Acquire(ctx, req); !errors.Is(err, fxelection.ErrLeaseHeld) {
				b.Fatal(err)
			}
		}
	})
	b.Run("reacquire", func(b *testing.B) {
		for b.Loop() {
			if _, err := be.Acquire(ctx, holder); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("free+release", func(b *testing.B) {
		req := holder
		req.Election = e + "-free"
		for b.Loop() {
			l, err := be.Acquire(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if err := be.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRenew measures the leader's renewal statement.
func BenchmarkRenew(b *testing.B) {
	ctx := context.Background()
	be := benchBackend(b)
	l, err := be.Acquire(ctx, fxelection.AcquireRequest{Election: election(b), Identity: "holder", Duration: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if l, err = be.Renew(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet measures reading the current holder.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	be := benchBackend(b)
	e := election(b)
	if _, err := be.Acquire(ctx, fxelection.AcquireRequest{Election: e, Identity: "holder", Duration: time.Minute}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := be.Get(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// handovers is the minimum number of hand-overs BenchmarkHandover measures.
const handovers = 250

// BenchmarkHandover measures graceful hand-over between two processes
// (two backends, each with its own pool): the time from the leader's Stop
// (which releases the lease) to the follower's becoming leader. The stopped
// side is replaced by a new elector on the same backend, which waits as a
// follower for the next round; each Stop comes at a random point of the
// follower's retry cycle. It runs max(b.N, 250) hand-overs and
// reports p50, p99 and max in ms; "push" uses the LISTEN/NOTIFY wake-up,
// "poll" waits for the follower's next retry (RetryPeriod 250ms, jittered).
func BenchmarkHandover(b *testing.B) {
	for _, mode := range []struct {
		name string
		push bool
	}{{"push", true}, {"poll", false}} {
		b.Run(mode.name, func(b *testing.B) {
			d := dsn(b)
			backends := [2]*pglease.Backend{}
			for i := range backends {
				backends[i], _ = newBackend(b, d, fmt.Sprintf("handover-%d", i), pglease.Options{DisablePush: !mode.push})
				// Keep each backend's listener up for the whole run, as in a
				// process whose elections come and go.
				b.Cleanup(backends[i].Subscribe("bench-keepalive", func() {}))
			}
			e := election(b)
			const retry = 250 * time.Millisecond
			led := make(chan time.Time, 4)
			observer := fxelection.ObserverFunc(func(ev fxelection.Event) {
				if ev.Kind == fxelection.EventStartedLeading {
					led <- time.Now()
				}
			})
			seq := 0
			start := func(be *pglease.Backend) *fxelection.Elector {
				seq++
				el, err := fxelection.New(fxelection.Config{
					Name: e, Identity: fmt.Sprintf("c%d", seq),
					LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: retry,
				}, be)
				if err != nil {
					b.Fatal(err)
				}
				el.AddObserver(observer)
				if err := el.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				return el
			}
			// The leader on backend 0, a follower on backend 1.
			leader := start(backends[0])
			<-led
			follower := start(backends[1])
			waitFollower := func(f *fxelection.Elector) {
				for {
					if l, ok := f.Leader(); ok && l.Holder == leader.Identity() {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			waitFollower(follower)
			n := max(b.N, handovers)
			samples := make([]time.Duration, 0, n)
			b.ResetTimer()
			for i := range n {
				// Stop at a random point of the follower's retry cycle.
				time.Sleep(rand.N(retry + retry/5))
				t0 := time.Now()
				if err := leader.Stop(context.Background()); err != nil {
					b.Fatal(err)
				}
				var t1 time.Time
				select {
				case t1 = <-led:
				case <-time.After(10 * time.Second):
					b.Fatalf("hand-over %d: no new leader within 10s", i)
				}
				samples = append(samples, t1.Sub(t0))
				// The old leader's side gets a new follower.
				leader, follower = follower, start(backends[(i)%2])
				waitFollower(follower)
			}
			b.StopTimer()
			_ = leader.Stop(context.Background())
			_ = follower.Stop(context.Background())
			slices.Sort(samples)
			var sum time.Duration
			for _, s := range samples {
				sum += s
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(len(samples)), "handovers")
			b.ReportMetric(ms(samples[len(samples)/2]), "p50-ms")
			b.ReportMetric(ms(samples[len(samples)*99/100]), "p99-ms")
			b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
			b.ReportMetric(ms(sum/time.Duration(len(samples))), "mean-ms")
		})
	}
}
