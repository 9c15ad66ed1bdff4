package kubelease_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// Run (inside modules/kubernetes): go test -run '^$' -bench . -benchtime 1x ./
// Both hand-over benchmarks use the same timing (lease 2s, renew deadline
// 1s, retry 100ms) and at least 100 hand-overs, in the same run.

const benchHandovers = 100

var benchTiming = electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}

// BenchmarkBackend measures the four operations as an elector uses them
// (storetest.RunBackendBenchmarks) on the package's API server.
func BenchmarkBackend(b *testing.B) {
	storetest.RunBackendBenchmarks(b, func(tb testing.TB) fxelection.Backend {
		return newBackend(tb, kubelease.Options{})
	}, 10*time.Second)
}

// BenchmarkHandover: the time from a leader's graceful stop until the
// follower leads, for fxelection (watch wake-up, and polling) and for
// client-go's LeaderElector with ReleaseOnCancel (which polls), on the
// same API server with the same timing.
func BenchmarkHandover(b *testing.B) {
	for _, mode := range []struct {
		name string
		push bool
	}{{"fxelection-watch", true}, {"fxelection-poll", false}} {
		b.Run(mode.name, func(b *testing.B) {
			bs := [2]*kubelease.Backend{newBackend(b, kubelease.Options{DisablePush: !mode.push}), newBackend(b, kubelease.Options{DisablePush: !mode.push})}
			if mode.push {
				for _, be := range bs { // keep each watch up between electors, as a long-lived process would
					b.Cleanup(be.Subscribe("bench-keepalive", func() {}))
				}
			}
			storetest.RunHandoverBenchmark(b, [2]fxelection.Backend{bs[0], bs[1]}, storetest.HandoverOptions{
				Timing: benchTiming, Handovers: benchHandovers, RandomPhase: !mode.push,
			})
		})
	}
	b.Run("client-go", func(b *testing.B) {
		name := fmt.Sprintf("bench-cg-%d", time.Now().UnixNano()%1e9)
		clients := [2]resourcelock.Interface{}
		type node struct {
			cancel  context.CancelFunc
			done    chan struct{}
			leading chan time.Time
		}
		start := func(i int) *node {
			if clients[i%2] == nil {
				clients[i%2] = &resourcelock.LeaseLock{
					LeaseMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Client: newClient(b).CoordinationV1(),
				}
			}
			lock := &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: "default"},
				Client:     clients[i%2].(*resourcelock.LeaseLock).Client,
				LockConfig: resourcelock.ResourceLockConfig{Identity: fmt.Sprintf("n%d", i)},
			}
			nd := &node{done: make(chan struct{}), leading: make(chan time.Time, 1)}
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: lock, LeaseDuration: benchTiming.LeaseDuration, RenewDeadline: benchTiming.RenewDeadline,
				RetryPeriod: benchTiming.RetryPeriod, ReleaseOnCancel: true,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) { nd.leading <- time.Now() },
					OnStoppedLeading: func() {},
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			nd.cancel = cancel
			go func() { defer close(nd.done); le.Run(ctx) }()
			return nd
		}
		leader := start(0)
		select {
		case <-leader.leading:
		case <-time.After(30 * time.Second):
			b.Fatal("no first leader")
		}
		n := max(b.N, benchHandovers)
		lat := make([]time.Duration, 0, n)
		for i := 1; i <= n; i++ {
			follower := start(i)
			time.Sleep(2 * benchTiming.RetryPeriod) // it has tried and seen the leader
			time.Sleep(rand.N(benchTiming.RetryPeriod * 12 / 10))
			t0 := time.Now()
			leader.cancel()
			<-leader.done // released (ReleaseOnCancel)
			select {
			case at := <-follower.leading:
				lat = append(lat, at.Sub(t0))
			case <-time.After(30 * time.Second):
				b.Fatalf("hand-over %d: no new leader", i)
			}
			leader = follower
		}
		leader.cancel()
		<-leader.done
		storetest.ReportHandovers(b, lat)
	})
}
