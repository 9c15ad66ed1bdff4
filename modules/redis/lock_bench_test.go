package redislease

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/lockbench"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/internal/testserver"
)

// Locks (package lock) on this backend against github.com/bsm/redislock, on
// one private redis-server. Run:
//
//	go test -run '^$' -bench 'BenchmarkLockAcquireRelease' -benchtime 3s -count 3 ./modules/redis/
//	go test -run '^$' -bench 'BenchmarkLockHandoff' -benchtime 10x -count 2 ./modules/redis/
//
// Both alternate the implementations in the same run (op by op, or round by
// round for the hand-off), so that the load of a shared machine falls on
// all of them alike; compare within one run.

// BenchmarkLockAcquireRelease: one uncontended lock.Locker Acquire +
// Lock.Release against redislock's Obtain + Lock.Release, on one client.
// The "solo" sub-benchmarks run one implementation each and add what
// redis-server counted (INFO): commands, connections accepted and server
// time per op; "alternated" runs every variant once per iteration,
// rotating which goes first, and reports each one's p50 and mean and the
// p50 ratio to redislock. The variants:
//
//   - fxelection: a Locker on a Backend with push wake-up and no other
//     subscription, as a process that only takes locks has it;
//   - fxelection-subscribed: the same, its Backend's pub/sub connection
//     kept up by another subscription (an Elector or a waiter elsewhere in
//     the process);
//   - fxelection-nopush: a Locker on a Backend with Options.DisablePush;
//   - backend: the Backend's Acquire + Release alone, as the Locker calls
//     them (a fresh incarnation each), without the Locker around them;
//   - redislock.
func BenchmarkLockAcquireRelease(b *testing.B) {
	srv := newServer(b, testserver.RedisOptions{})
	client := newClient(b, srv.Addr())
	vs := lockVariants(b, client)
	for _, v := range vs {
		b.Run("solo/"+v.name, func(b *testing.B) {
			b.ReportAllocs()
			done := redisStats(b, client)
			for b.Loop() {
				if err := v.op(); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
	b.Run("alternated", func(b *testing.B) {
		alternate(b, "redislock", vs)
	})
}

// lockVariant is one implementation of acquire + release.
type lockVariant struct {
	name string
	op   func() error
}

// lockVariants returns BenchmarkLockAcquireRelease's variants on client,
// each on a key of its own.
func lockVariants(b *testing.B, client *redis.Client) []lockVariant {
	ctx := context.Background()
	locker := func(opts Options, key string) func() error {
		l, err := lock.New(mustNew(b, client, opts), lock.Options{Identity: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		return lockOp(l, key)
	}
	subscribed := mustNew(b, client, Options{KeyPrefix: "fxsub:"})
	b.Cleanup(subscribed.Subscribe("bench-keepalive", func() {}))
	waitSubscribed(b, client, subscribed.WakeChannel(), 1)
	subLocker, err := lock.New(subscribed, lock.Options{Identity: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	be := mustNew(b, client, Options{DisablePush: true})
	rl := redislock.New(client)
	return []lockVariant{
		{"fxelection", locker(Options{}, "bench-lock")},
		{"fxelection-subscribed", lockOp(subLocker, "bench-lock-sub")},
		{"fxelection-nopush", locker(Options{DisablePush: true}, "bench-lock-nopush")},
		{"backend", func() error {
			inc := backendkit.NewIncarnation()
			l, err := be.Acquire(ctx, backendkit.AcquireRequest{Election: "bench-lock-backend", Identity: "bench/" + inc, Duration: 15 * time.Second, Incarnation: inc})
			if err != nil {
				return err
			}
			return be.Release(ctx, l)
		}},
		{"redislock", func() error {
			l, err := rl.Obtain(ctx, "bench-redislock", 15*time.Second, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
	}
}

// lockOp is one Acquire + Release of key with l.
func lockOp(l *lock.Locker, key string) func() error {
	return func() error {
		lk, err := l.Acquire(context.Background(), key)
		if err != nil {
			return err
		}
		return lk.Release(context.Background())
	}
}

// waitSubscribed waits until channel has n subscribers.
func waitSubscribed(b *testing.B, client *redis.Client, channel string, n int64) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := client.PubSubNumSub(context.Background(), channel).Result()
		if err != nil {
			b.Fatal(err)
		}
		if res[channel] == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d subscribers, want %d", channel, res[channel], n)
		}
		time.Sleep(time.Millisecond)
	}
}

// redisStats resets the server's statistics; the function it returns stops
// the timer and reports, per iteration, the commands clients sent
// (rt/op: round trips, as no pipeline is used; CONFIG and INFO, the
// benchmark's own, excepted), every command the server executed including
// those that scripts called (calls/op), the connections it accepted
// (conns/op) and the time it spent in the clients' commands (server-µs/op;
// a script's time includes the commands it called). With -v it logs the
// command statistics.
func redisStats(b *testing.B, client *redis.Client) func() {
	ctx := context.Background()
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		b.StopTimer()
		info, err := client.Info(ctx, "commandstats", "stats").Result()
		if err != nil {
			b.Fatal(err)
		}
		var rt, calls, usec, conns int64
		var seen []string
		for _, line := range strings.Split(info, "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
				conns, _ = strconv.ParseInt(v, 10, 64)
				continue
			}
			name, fields, ok := strings.Cut(line, ":")
			cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
			if !ok || !isCmd || strings.HasPrefix(cmd, "config") || cmd == "info" {
				continue
			}
			var n, u int64
			for _, f := range strings.Split(fields, ",") {
				k, v, _ := strings.Cut(f, "=")
				x, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					n = x
				case "usec":
					u = x
				}
			}
			calls += n
			if topLevel(cmd) {
				rt += n
				usec += u
			}
			seen = append(seen, fmt.Sprintf("%s=%.2f", cmd, float64(n)/float64(b.N)))
		}
		n := float64(b.N)
		b.ReportMetric(float64(rt)/n, "rt/op")
		b.ReportMetric(float64(calls)/n, "calls/op")
		b.ReportMetric(float64(conns)/n, "conns/op")
		b.ReportMetric(float64(usec)/n, "server-µs/op")
		b.Logf("commands per op: %s", strings.Join(seen, " "))
	}
}

// topLevel reports whether the command cmd (as INFO commandstats names
// it) is one a client sends rather than one the scripts here call.
func topLevel(cmd string) bool {
	switch cmd {
	case "get", "set", "del", "incr", "time", "pttl", "pexpire", "publish", "getrange":
		return false
	}
	return true
}

// alternate runs every variant once per iteration, rotating which goes
// first, and reports each one's p50 and mean latency and its p50 and mean
// relative to the variant named ref.
func alternate(b *testing.B, ref string, vs []lockVariant) {
	durs := make([][]time.Duration, len(vs))
	for i := 0; b.Loop(); i++ {
		for j := range vs {
			k := (i + j) % len(vs)
			t0 := time.Now()
			if err := vs[k].op(); err != nil {
				b.Fatalf("%s: %v", vs[k].name, err)
			}
			durs[k] = append(durs[k], time.Since(t0))
		}
	}
	b.StopTimer()
	p50, mean := make([]float64, len(vs)), make([]float64, len(vs))
	r := -1
	for k, d := range durs {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		mean[k] = float64(sum) / float64(len(d)) / 1e3
		slices.Sort(d)
		p50[k] = float64(pct(d, 0.5)) / 1e3
		if vs[k].name == ref {
			r = k
		}
	}
	for k, v := range vs {
		b.ReportMetric(p50[k], v.name+"-p50-µs")
		b.ReportMetric(mean[k], v.name+"-mean-µs")
		if r >= 0 && k != r {
			b.ReportMetric(p50[k]/p50[r], v.name+"/"+ref+"-p50")
			b.ReportMetric(mean[k]/mean[r], v.name+"/"+ref+"-mean")
		}
	}
}

// BenchmarkLockHandoff: 4 goroutines, each with its own client (as four
// processes), take one key in turn, hold it 1 ms and release it. After
// releasing, a goroutine waits until another has taken the key, and then
// for a random time below the variant's poll period (its arrival spread;
// none for push), before it tries again: every hand-off goes to a waiter
// already waiting, never to the releaser itself, and pollers poll at random
// phases (see handoffRound). Hand-off latency: from the holder's Release
// returning to the next holder's Acquire returning ("handoff"; slightly
// negative when the waiter's wake-up beats the release's reply to the
// releaser), and from the holder calling Release ("gap", the time the lock
// served nobody); a release with nobody waiting is not counted. Each
// iteration is a round of 41 acquisitions per variant on a fresh key,
// variants in rotating order; at least 5 rounds. The variants:
//
//   - fxelection: lock.Locker with push wake-up (pub/sub), default Options;
//   - fxelection-poll-100ms and -10ms: push off (Options.DisablePush),
//     RetryPeriod 100ms / 10ms (fxelection jitters each wait to 1–1.2 ×);
//   - redislock-100ms and -10ms: redislock.LinearBackoff(100ms / 10ms),
//     the retry of redislock's README (100ms) and a fast one;
//   - redislock-exp: redislock.ExponentialBackoff(16ms, 256ms), 16ms being
//     its documented minimum (a fresh strategy per Obtain: it counts);
//     arrival spread 16ms.
func BenchmarkLockHandoff(b *testing.B) {
	srv := newServer(b, testserver.RedisOptions{})
	const waiters = 4
	fx := func(opts Options, lopts lock.Options) []acquirer {
		as := make([]acquirer, waiters)
		for i := range as {
			lopts.Identity = fmt.Sprintf("w%d", i)
			l, err := lock.New(newBackend(b, srv.Addr(), opts), lopts)
			if err != nil {
				b.Fatal(err)
			}
			as[i] = func(ctx context.Context, key string) (func(context.Context) error, error) {
				lk, err := l.Acquire(ctx, key)
				if err != nil {
					return nil, err
				}
				return lk.Release, nil
			}
		}
		return as
	}
	rl := func(retry func() redislock.RetryStrategy) []acquirer {
		as := make([]acquirer, waiters)
		for i := range as {
			c := redislock.New(newClient(b, srv.Addr()))
			as[i] = func(ctx context.Context, key string) (func(context.Context) error, error) {
				lk, err := c.Obtain(ctx, key, 15*time.Second, &redislock.Options{RetryStrategy: retry()})
				if err != nil {
					return nil, err
				}
				return lk.Release, nil
			}
		}
		return as
	}
	linear := func(d time.Duration) func() redislock.RetryStrategy {
		return func() redislock.RetryStrategy { return redislock.LinearBackoff(d) }
	}
	vs := []handoffVariant{
		{Name: "fxelection", Spread: 0, Acquirers: fx(Options{}, lock.Options{})},
		{Name: "fxelection-poll-100ms", Spread: 100 * time.Millisecond, Acquirers: fx(Options{DisablePush: true}, lock.Options{Timing: fxelection.Timing{RetryPeriod: 100 * time.Millisecond}})},
		{Name: "fxelection-poll-10ms", Spread: 10 * time.Millisecond, Acquirers: fx(Options{DisablePush: true}, lock.Options{Timing: fxelection.Timing{RetryPeriod: 10 * time.Millisecond}})},
		{Name: "redislock-100ms", Spread: 100 * time.Millisecond, Acquirers: rl(linear(100 * time.Millisecond))},
		{Name: "redislock-10ms", Spread: 10 * time.Millisecond, Acquirers: rl(linear(10 * time.Millisecond))},
		{Name: "redislock-exp", Spread: 16 * time.Millisecond, Acquirers: rl(func() redislock.RetryStrategy {
			return redislock.ExponentialBackoff(16*time.Millisecond, 256*time.Millisecond)
		})},
	}
	runHandoffBenchmark(b, vs)
}

// The hand-off benchmark's harness is shared with the other module's lock
// benchmarks (internal/lockbench).
type (
	acquirer       = lockbench.Acquirer
	handoffVariant = lockbench.Variant
)

var runHandoffBenchmark = lockbench.Run
