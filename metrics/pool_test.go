package metrics_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
	"github.com/fxelection/fxelection/metrics"
)

// TestPoolMetrics: a lone worker of a pool of four shards on the
// in-memory backend comes to own all four; its series say so, read from
// its Status at the scrape.
func TestPoolMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		p, err := pool.New(pool.Config{
			Name: "jobs", Identity: "w1", Shards: []string{"a", "b", "c", "d"},
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   500 * time.Millisecond,
			},
		}, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		unregister, err := metrics.RegisterPool(reg, "jobs", p)
		if err != nil {
			t.Fatalf("RegisterPool: %v", err)
		}
		defer unregister()
		if _, err := metrics.RegisterPool(reg, "jobs", p); err == nil {
			t.Error("a second RegisterPool of the same pool name on one registry should fail")
		}

		if err := p.Start(context.Background()); err != nil {
			t.Fatalf("start: %v", err)
		}
		defer func() {
			if err := p.Stop(context.Background()); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
		// Generous: the fake clock makes the wait cost nothing.
		for deadline := time.Now().Add(time.Minute); p.Status().Owned < 4; {
			if time.Now().After(deadline) {
				t.Fatalf("the worker did not come to own every shard: %+v", p.Status())
			}
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}

		const want = `
# HELP fxelection_pool_acquired_total Shard leaderships this pool worker has taken since it started, free, handed over or after an owner failed (Status.Acquired).
# TYPE fxelection_pool_acquired_total counter
fxelection_pool_acquired_total{pool="jobs"} 4
# HELP fxelection_pool_lost_total Shard leaderships of this pool worker that ended other than by a hand-over or Stop: lease lost, renew deadline, health (Status.Lost).
# TYPE fxelection_pool_lost_total counter
fxelection_pool_lost_total{pool="jobs"} 0
# HELP fxelection_pool_members Live workers of the pool at this worker's last scan, itself included once it holds a member slot (Status.Members).
# TYPE fxelection_pool_members gauge
fxelection_pool_members{pool="jobs"} 1
# HELP fxelection_pool_mismatched_members Live members of the pool that balance over another shard list or MaxWorkers than this worker, at its last scan (Status.Mismatched).
# TYPE fxelection_pool_mismatched_members gauge
fxelection_pool_mismatched_members{pool="jobs"} 0
# HELP fxelection_pool_moves_total Shards this pool worker has handed over to others since it started (Status.Moves).
# TYPE fxelection_pool_moves_total counter
fxelection_pool_moves_total{pool="jobs"} 0
# HELP fxelection_pool_owned_shards Shards this pool worker owns now (Status.Owned), read at each scrape.
# TYPE fxelection_pool_owned_shards gauge
fxelection_pool_owned_shards{pool="jobs"} 4
# HELP fxelection_pool_slot_refused_total Member slot acquisitions of this pool worker that the store refused for their lease duration since it started (Status.SlotRefused).
# TYPE fxelection_pool_slot_refused_total counter
fxelection_pool_slot_refused_total{pool="jobs"} 0
# HELP fxelection_pool_target_shards Share of the shards this pool worker aims at: ceil(shards / members) (Status.Target), read at each scrape.
# TYPE fxelection_pool_target_shards gauge
fxelection_pool_target_shards{pool="jobs"} 4
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Errorf("pool metrics:\n%v", err)
		}
		lintClean(t, reg)

		unregister()
		unregister() // idempotent
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after unregister", n)
		}
	})
}

// TestRegisterPoolSideBySide: workers of two pools register on one
// registry, each under its own pool label; bad arguments are refused.
func TestRegisterPoolSideBySide(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	mem := memory.New()
	var unregs []func()
	for _, name := range []string{"alpha", "beta"} {
		p, err := pool.New(pool.Config{Name: name, Identity: "w1", Shards: []string{"a", "b"}}, mem)
		if err != nil {
			t.Fatal(err)
		}
		u, err := metrics.RegisterPool(reg, name, p)
		if err != nil {
			t.Fatalf("RegisterPool(%s): %v", name, err)
		}
		unregs = append(unregs, u)
		if _, err := metrics.RegisterPool(reg, "", p); err == nil {
			t.Error("RegisterPool with an empty name should fail")
		}
	}
	if _, err := metrics.RegisterPool(reg, "gamma", nil); err == nil {
		t.Error("RegisterPool of a nil pool should fail")
	}
	// Not started: no slot, no shards, no members seen yet.
	want := map[string]float64{"pool=alpha": 0, "pool=beta": 0}
	for _, name := range []string{metrics.NamePoolOwned, metrics.NamePoolTarget, metrics.NamePoolMembers, metrics.NamePoolMoves, metrics.NamePoolAcquired, metrics.NamePoolLost} {
		if got := series(t, reg, name); !equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	lintClean(t, reg)
	for _, u := range unregs {
		u()
	}
	if n, _ := testutil.GatherAndCount(reg); n != 0 {
		t.Errorf("%d series after unregister", n)
	}
}
