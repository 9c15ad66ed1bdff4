package pool_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// TestKilledWorkerSharesRespread: a worker that dies without releasing
// anything (its store calls all fail from one instant on and never
// recover, which is what a process killed with SIGKILL looks like to the
// store) loses its shards to the survivors within LeaseDuration plus two
// RetryPeriods, each taken with a term above the dead worker's; once its
// member slot has expired the survivors hold floor or ceil of the shards
// over their number, ±1, within LeaseDuration plus eight RetryPeriods of
// the kill. On fake time, so the bounds are exact.
func TestKilledWorkerSharesRespread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const shards, workers = 60, 4
		store := memory.New()
		cfg := func(id string) pool.Config {
			return pool.Config{
				Name: "kill", Identity: id, Shards: numbered(shards),
				Timing: fxelection.Timing{
					LeaseDuration: 3 * time.Second,
					RenewDeadline: 2 * time.Second,
					RetryPeriod:   500 * time.Millisecond,
				},
			}
		}
		var live []*pool.Pool
		for i := range workers - 1 {
			live = append(live, startPool(t, cfg(fmt.Sprintf("w%d", i)), store))
		}
		dead := faultinject.New(store)
		victim, err := pool.New(cfg("victim"), dead)
		if err != nil {
			t.Fatal(err)
		}
		if err := victim.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = victim.Stop(ctx) // its store is gone: errors expected
		}()
		counts := func() []int {
			c := make([]int, len(live))
			for i, p := range live {
				c[i] = len(p.Owned())
			}
			return c
		}
		// Every worker, the victim included, holds its share ±1.
		for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			n := len(victim.Owned())
			ok := n >= shards/workers-1 && n <= shards/workers+1
			for _, c := range counts() {
				ok = ok && c >= shards/workers-1 && c <= shards/workers+1
			}
			if ok {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("no spread over %d workers: victim %d, others %v", workers, n, counts())
			}
		}
		held := make(map[string]uint64) // the victim's shards and terms
		for _, s := range victim.Owned() {
			held[s.Name] = s.Lease.Term
		}

		killed := time.Now()
		dead.Partition(true)
		// Its shards are owned again, by the survivors, with higher terms.
		limit := 3*time.Second + 2*500*time.Millisecond
		for {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			owned := make(map[string]bool, shards)
			for i, p := range live {
				for _, s := range p.Owned() {
					owned[s.Name] = true
					if term, ok := held[s.Name]; ok && s.Lease.Term <= term {
						t.Fatalf("shard %s taken by w%d with term %d, not above the dead worker's %d", s.Name, i, s.Lease.Term, term)
					}
				}
			}
			orphans := 0
			for name := range held {
				if !owned[name] {
					orphans++
				}
			}
			if orphans == 0 {
				break
			}
			if time.Since(killed) > limit {
				t.Fatalf("%d of the dead worker's %d shards not owned again %v after the kill", orphans, len(held), limit)
			}
		}
		// The survivors spread the shards among themselves.
		n := len(live)
		lo, hi := shards/n-1, (shards+n-1)/n+1
		for {
			c, sum, ok := counts(), 0, true
			for _, k := range c {
				sum += k
				ok = ok && k >= lo && k <= hi
			}
			if ok && sum == shards {
				break
			}
			if time.Since(killed) > 3*time.Second+8*500*time.Millisecond {
				t.Fatalf("survivors hold %v after the kill, want %d..%d each and %d in all", c, lo, hi, shards)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
