package redislease

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/lockbench"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
)

// Run: go test -run '^$' -bench . -benchtime 3s -count 3 ./modules/redis/
// (BenchmarkHandover needs -benchtime 250x or more for 200+ hand-overs; it
// uses 250 by default when b.N is smaller.)

// BenchmarkAcquireRelease compares one Acquire+Release pair with
// bsm/redislock's Obtain+Release on the same server and client.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := newServer(b, testserver.RedisOptions{})
	client := newClient(b, srv.Addr())
	ctx := context.Background()
	b.Run("fxelection", func(b *testing.B) {
		be := mustNew(b, client, Options{})
		req := backendkit.AcquireRequest{Election: "bench-ar", Identity: "a", Metadata: map[string]string{"addr": "10.0.0.1:8080"}, Duration: 10 * time.Second}
		b.ReportAllocs()
		done := serverTime(b, client)
		for b.Loop() {
			l, err := be.Acquire(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if err := be.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("redislock", func(b *testing.B) {
		locker := redislock.New(client)
		opt := &redislock.Options{Metadata: "10.0.0.1:8080"}
		b.ReportAllocs()
		done := serverTime(b, client)
		for b.Loop() {
			lock, err := locker.Obtain(ctx, "bench-redislock-ar", 10*time.Second, opt)
			if err != nil {
				b.Fatal(err)
			}
			if err := lock.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("paired", func(b *testing.B) {
		be := mustNew(b, client, Options{})
		req := backendkit.AcquireRequest{Election: "bench-ar-paired", Identity: "a", Metadata: map[string]string{"addr": "10.0.0.1:8080"}, Duration: 10 * time.Second}
		locker := redislock.New(client)
		opt := &redislock.Options{Metadata: "10.0.0.1:8080"}
		paired(b, func() error {
			l, err := be.Acquire(ctx, req)
			if err != nil {
				return err
			}
			return be.Release(ctx, l)
		}, func() error {
			lock, err := locker.Obtain(ctx, "bench-redislock-ar-paired", 10*time.Second, opt)
			if err != nil {
				return err
			}
			return lock.Release(ctx)
		})
	})
}

// serverTime resets the server's command statistics; the function it
// returns stops the timer and reports the script time Redis itself measured
// (INFO commandstats, EVAL and EVALSHA) per iteration: the server-side cost,
// which depends far less on the machine's load than wall time.
func serverTime(b *testing.B, client *redis.Client) func() {
	ctx := context.Background()
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		b.StopTimer()
		info, err := client.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		var usec int64
		for _, line := range strings.Split(info, "\n") {
			if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
				continue
			}
			for _, f := range strings.Split(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					usec += n
				}
			}
		}
		b.ReportMetric(float64(usec)/float64(b.N), "server-µs/op")
	}
}

// paired runs ours and theirs alternately (swapping the order every
// iteration), so both see the same machine load, and reports the median
// and mean latency of each and their ratios. On a shared machine this
// comparison is far steadier than two benchmarks run one after the other.
func paired(b *testing.B, ours, theirs func() error) {
	var a, r []time.Duration
	timed := func(f func() error, into *[]time.Duration) {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			timed(ours, &a)
			timed(theirs, &r)
		} else {
			timed(theirs, &r)
			timed(ours, &a)
		}
	}
	mean := func(d []time.Duration) float64 {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		return float64(sum) / float64(len(d)) / 1e3
	}
	ma, mr := mean(a), mean(r)
	slices.Sort(a)
	slices.Sort(r)
	pa, pr := float64(pct(a, 0.5))/1e3, float64(pct(r, 0.5))/1e3
	b.ReportMetric(pa, "fxelection-p50-µs")
	b.ReportMetric(pr, "redislock-p50-µs")
	b.ReportMetric(ma, "fxelection-mean-µs")
	b.ReportMetric(mr, "redislock-mean-µs")
	b.ReportMetric(pa/pr, "p50-ratio")
	b.ReportMetric(ma/mr, "mean-ratio")
}

// pct is the q-quantile of sorted (nearest rank).
var pct = lockbench.Pct

// BenchmarkRenew compares Renew with redislock's Refresh.
func BenchmarkRenew(b *testing.B) {
	srv := newServer(b, testserver.RedisOptions{})
	client := newClient(b, srv.Addr())
	ctx := context.Background()
	b.Run("fxelection", func(b *testing.B) {
		be := mustNew(b, client, Options{})
		l, err := be.Acquire(ctx, backendkit.AcquireRequest{Election: fmt.Sprintf("bench-renew-%d", time.Now().UnixNano()), Identity: "a", Duration: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		done := serverTime(b, client)
		for b.Loop() {
			if l, err = be.Renew(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
		done()
		_ = be.Release(ctx, l)
	})
	b.Run("redislock", func(b *testing.B) {
		lock, err := redislock.New(client).Obtain(ctx, fmt.Sprintf("bench-redislock-renew-%d", time.Now().UnixNano()), 10*time.Second, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		done := serverTime(b, client)
		for b.Loop() {
			if err := lock.Refresh(ctx, 10*time.Second, nil); err != nil {
				b.Fatal(err)
			}
		}
		done()
		_ = lock.Release(ctx)
	})
	b.Run("paired", func(b *testing.B) {
		be := mustNew(b, client, Options{})
		l, err := be.Acquire(ctx, backendkit.AcquireRequest{Election: fmt.Sprintf("bench-renew-paired-%d", time.Now().UnixNano()), Identity: "a", Duration: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		lock, err := redislock.New(client).Obtain(ctx, fmt.Sprintf("bench-redislock-renew-paired-%d", time.Now().UnixNano()), 10*time.Second, nil)
		if err != nil {
			b.Fatal(err)
		}
		paired(b, func() error {
			l, err = be.Renew(ctx, l)
			return err
		}, func() error {
			return lock.Refresh(ctx, 10*time.Second, nil)
		})
		b.StopTimer()
		_ = be.Release(ctx, l)
		_ = lock.Release(ctx)
	})
}

// BenchmarkHandover measures graceful hand-over latency (the leader's Stop
// until the elector on another client leads), with push wake-up and with
// polling only, over at least 250 hand-overs.
func BenchmarkHandover(b *testing.B) {
	srv := newServer(b, testserver.RedisOptions{})
	for _, mode := range []struct {
		name string
		push bool
	}{{"push", true}, {"poll-100ms", false}} {
		b.Run(mode.name, func(b *testing.B) {
			backends := [2]*Backend{newBackend(b, srv.Addr(), Options{DisablePush: !mode.push}), newBackend(b, srv.Addr(), Options{DisablePush: !mode.push})}
			if mode.push {
				keepSubscribed(b, backends)
			}
			storetest.RunHandoverBenchmark(b, [2]fxelection.Backend{backends[0], backends[1]}, storetest.HandoverOptions{
				Timing: electiontest.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
			})
		})
	}
}

// keepSubscribed keeps each backend's pub/sub connection up between
// electors, as a long-lived process would, and waits until both are
// subscribed.
func keepSubscribed(b *testing.B, backends [2]*Backend) {
	ctx := context.Background()
	for _, be := range backends {
		b.Cleanup(be.Subscribe("bench-keepalive", func() {}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := backends[0].client.PubSubNumSub(ctx, backends[0].WakeChannel()).Result()
		if err != nil {
			b.Fatal(err)
		}
		if res[backends[0].WakeChannel()] == 2 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("pub/sub connections not subscribed")
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkBatch measures one RenewBatch and one AcquireBatch call of 1024
// leases (the most the core sends at once): what a batch costs the client
// and the server together.
func BenchmarkBatch(b *testing.B) {
	srv := newServer(b, testserver.RedisOptions{})
	client := newClient(b, srv.Addr())
	ctx := context.Background()
	be := mustNew(b, client, Options{})
	base := fmt.Sprintf("bench-batch-%d", time.Now().UnixNano())
	reqs := make([]backendkit.AcquireRequest, 1024)
	for i := range reqs {
		reqs[i] = backendkit.AcquireRequest{Election: fmt.Sprintf("%s-%d", base, i), Identity: "a", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()}
	}
	leases := make([]fxelection.Lease, len(reqs))
	for i, r := range be.AcquireBatch(ctx, reqs) {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
		leases[i] = r.Lease
	}
	b.Run("RenewBatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range be.RenewBatch(ctx, leases) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	})
	b.Run("AcquireBatch", func(b *testing.B) { // every request continues its own lease
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range be.AcquireBatch(ctx, reqs) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	})
}
