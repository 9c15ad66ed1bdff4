package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// RunBackendBenchmarks measures a backend's four operations as an elector
// uses them: AcquireHeld (a follower's poll of a lease someone holds),
// Reacquire (a holder taking its own lease again, as after a restart),
// Renew (a leader's renewal), Get, and AcquireRelease (one full hand-over
// cycle). d is the lease duration requested (within the backend's limits).
// newBackend returns a separate client on the store under test per call.
func RunBackendBenchmarks(b *testing.B, newBackend func(tb testing.TB) fxelection.Backend, d time.Duration) {
	ctx := context.Background()
	req := func(e, id string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Duration: d}
	}
	b.Run("AcquireHeld", func(b *testing.B) {
		a, f, e := newBackend(b), newBackend(b), electiontesting.Election(b)
		if _, err := a.Acquire(ctx, req(e, "a")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := f.Acquire(ctx, req(e, "f")); err == nil {
				b.Fatal("acquired a held lease")
			}
		}
	})
	b.Run("Reacquire", func(b *testing.B) {
		a, e := newBackend(b), electiontesting.Election(b)
		for b.Loop() {
			if _, err := a.Acquire(ctx, req(e, "a")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Renew", func(b *testing.B) {
		a, e := newBackend(b), electiontesting.Election(b)
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
		a, e := newBackend(b), electiontesting.Election(b)
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
		a, e := newBackend(b), electiontesting.Election(b)
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

// HandoverOptions configure RunHandoverBenchmark. Zero fields mean the
// documented defaults.
type HandoverOptions struct {
	// Timing of the electors. Default: LeaseDuration 3s, RenewDeadline 2s,
	// RetryPeriod 500ms (as electiontest.Options.Timing).
	Timing electiontest.Timing
	// Handovers is the least number of hand-overs measured (b.N if
	// larger). Default: 250.
	Handovers int
	// RandomPhase stops each leader at a random point of the follower's
	// retry cycle, so polling backends show their average wait rather than
	// one fixed phase.
	RandomPhase bool
}

// RunHandoverBenchmark measures graceful hand-over: the time from a
// leader's Stop (which releases the lease) until a follower on the other
// backend (another client, as another process would have) starts leading.
// Each round a new follower joins on the other backend and waits until it
// knows the leader. It reports p50-ms, p99-ms, max-ms, mean-ms and
// handovers.
func RunHandoverBenchmark(b *testing.B, backends [2]fxelection.Backend, o HandoverOptions) {
	ctx := context.Background()
	o.Timing = o.Timing.WithDefaults()
	if o.Handovers == 0 {
		o.Handovers = 250
	}
	election := electiontesting.Election(b)
	type node struct {
		e       *fxelection.Elector
		leading chan time.Time
	}
	start := func(i int) *node {
		nd := &node{leading: make(chan time.Time, 1)}
		e, err := fxelection.New(fxelection.Config{
			Name: election, Identity: fmt.Sprintf("n%d", i),
			Timing: fxelection.Timing{
				LeaseDuration: o.Timing.LeaseDuration,
				RenewDeadline: o.Timing.RenewDeadline,
				RetryPeriod:   o.Timing.RetryPeriod,
			},
		}, backends[i%2])
		if err != nil {
			b.Fatal(err)
		}
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventStartedLeading {
				select {
				case nd.leading <- time.Now():
				default:
				}
			}
		}))
		if err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		nd.e = e
		return nd
	}
	leader := start(0)
	select {
	case <-leader.leading:
	case <-time.After(10 * time.Second):
		b.Fatal("no first leader")
	}
	n := max(b.N, o.Handovers)
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 1; i <= n; i++ {
		follower := start(i)
		deadline := time.Now().Add(10 * time.Second)
		for { // until the follower made its first attempt and saw the leader
			if l, ok := follower.e.Leader(); ok && l.Holder == leader.e.Status().Identity {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("follower never saw the leader")
			}
			time.Sleep(200 * time.Microsecond)
		}
		if o.RandomPhase {
			time.Sleep(rand.N(backoff.JitterMax(o.Timing.RetryPeriod)))
		}
		t0 := time.Now()
		if err := leader.e.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-follower.leading:
			lat = append(lat, at.Sub(t0))
		case <-time.After(10 * time.Second):
			b.Fatalf("hand-over %d: no new leader within 10s", i)
		}
		leader = follower
	}
	b.StopTimer()
	if err := leader.e.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	ReportHandovers(b, lat)
}

// ReportHandovers reports hand-over latencies lat as RunHandoverBenchmark
// does: p50-ms, p99-ms, max-ms, mean-ms and handovers (and no ns/op). For
// a benchmark that measures another elector's hand-overs the same way
// (client-go's, say), to compare in one run. lat must not be empty; it is
// sorted in place.
func ReportHandovers(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(q float64) time.Duration { return lat[max(int(math.Ceil(q*float64(len(lat))))-1, 0)] }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(len(lat)), "handovers")
	b.ReportMetric(ms(pct(0.50)), "p50-ms")
	b.ReportMetric(ms(pct(0.99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(sum/time.Duration(len(lat))), "mean-ms")
}
