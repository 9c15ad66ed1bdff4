package pglease_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/lockbench"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/lock"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// Locks (package lock) on this backend against PostgreSQL's advisory
// locks, as lock libraries built on them take them
// (pg_try_advisory_lock(hashtext(key)) on a pooled connection held until
// pg_advisory_unlock), on the package's private server. Run:
//
//	go test -run '^$' -bench 'BenchmarkLockAcquireRelease' -benchtime 3s -count 3 ./modules/postgres/
//	go test -run '^$' -bench 'BenchmarkLockHandoff' -benchtime 10x -count 2 ./modules/postgres/
//
// Both alternate the implementations in the same run (op by op, or round by
// round for the hand-off), so that the load of a shared machine falls on
// all of them alike; compare within one run.

// Advisory-lock statements, keyed as pglock-style libraries key them.
const (
	sqlTryLock     = "SELECT pg_try_advisory_lock(hashtext($1))"
	sqlLock        = "SELECT pg_advisory_lock(hashtext($1))"
	sqlUnlock      = "SELECT pg_advisory_unlock(hashtext($1))"
	sqlTryXactLock = "SELECT pg_try_advisory_xact_lock(hashtext($1))"
)

// BenchmarkLockAcquireRelease: one uncontended lock.Locker Acquire +
// Lock.Release against an advisory lock taken and given back. The "solo"
// sub-benchmarks run one implementation each and add what its pool saw:
// statements sent (stmts/op, each a round trip) and connections opened
// (conns/op); "alternated" runs every variant but the first once per
// iteration, rotating which goes first, and reports each one's p50 and
// mean and the p50 ratio to the session advisory lock. Each variant has a
// pool of its own (4 connections at most). The variants:
//
//   - fxelection: a Locker on a Backend with push wake-up and no other
//     subscription, as a process that only takes locks has it;
//   - fxelection-subscribed: the same, its Backend's LISTEN session kept
//     up by another subscription (an Elector or a waiter elsewhere in the
//     process);
//   - fxelection-nopush: a Locker on a Backend with Options.DisablePush;
//   - backend: the Backend's Acquire + Release alone, as the Locker calls
//     them (a fresh incarnation each), without the Locker around them;
//   - advisory: a connection from the pool, pg_try_advisory_lock, then
//     pg_advisory_unlock and the connection back (a session lock, held
//     across statements as a critical section needs);
//   - advisory-xact: BEGIN, pg_try_advisory_xact_lock, COMMIT (the lock
//     lives as long as the transaction: only for work done inside it).
func BenchmarkLockAcquireRelease(b *testing.B) {
	d := dsn(b)
	ctx := context.Background()
	var vs []pgVariant
	locker := func(name string, opts pglease.Options, subscribed bool) {
		p := newTracedPool(b, d, name)
		opts.Channel = "bench_" + strings.ReplaceAll(name, "-", "_")
		be, err := pglease.New(p.Pool, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = be.Close() })
		if err := be.CreateTable(ctx); err != nil {
			b.Fatal(err)
		}
		if subscribed {
			b.Cleanup(be.Subscribe("bench-keepalive", func() {}))
			waitListening(b, p.Pool, opts.Channel)
		}
		l, err := lock.New(be, lock.Options{Identity: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		key := "bench-lock-" + name
		vs = append(vs, pgVariant{name: name, pool: p, op: func() error {
			lk, err := l.Acquire(ctx, key)
			if err != nil {
				return err
			}
			return lk.Release(ctx)
		}})
	}
	locker("fxelection", pglease.Options{}, false)
	locker("fxelection-subscribed", pglease.Options{}, true)
	locker("fxelection-nopush", pglease.Options{DisablePush: true}, false)

	bp := newTracedPool(b, d, "backend")
	be, err := pglease.New(bp.Pool, pglease.Options{DisablePush: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	vs = append(vs, pgVariant{name: "backend", pool: bp, op: func() error {
		inc := backendkit.NewIncarnation()
		l, err := be.Acquire(ctx, backendkit.AcquireRequest{Election: "bench-lock-backend", Identity: "bench/" + inc, Duration: 15 * time.Second, Incarnation: inc})
		if err != nil {
			return err
		}
		return be.Release(ctx, l)
	}})

	ap := newTracedPool(b, d, "advisory")
	vs = append(vs, pgVariant{name: "advisory", pool: ap, op: func() error {
		release, err := tryAdvisory(ctx, ap.Pool, "bench-advisory")
		if err != nil {
			return err
		}
		return release(ctx)
	}})
	xp := newTracedPool(b, d, "advisory-xact")
	vs = append(vs, pgVariant{name: "advisory-xact", pool: xp, op: func() error {
		return pgx.BeginFunc(ctx, xp.Pool, func(tx pgx.Tx) error {
			var ok bool
			if err := tx.QueryRow(ctx, sqlTryXactLock, "bench-advisory-xact").Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return errors.New("advisory xact lock not obtained")
			}
			return nil
		})
	}})

	for _, v := range vs {
		b.Run("solo/"+v.name, func(b *testing.B) {
			b.ReportAllocs()
			stmts0, conns0 := v.pool.stmts.Load(), v.pool.Stat().NewConnsCount()
			for b.Loop() {
				if err := v.op(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(v.pool.stmts.Load()-stmts0)/n, "stmts/op")
			b.ReportMetric(float64(v.pool.Stat().NewConnsCount()-conns0)/n, "conns/op")
		})
	}
	// Not the cold fxelection variant: each of its Acquires opens a
	// PostgreSQL connection (a server process) and closes it, which loads
	// the server for the variants that run beside it. Its solo figures
	// tell its cost.
	b.Run("alternated", func(b *testing.B) {
		alternate(b, "advisory", vs[1:])
	})
}

// pgVariant is one implementation of acquire + release, with its pool.
type pgVariant struct {
	name string
	pool *tracedPool
	op   func() error
}

// tracedPool is a pool that counts the statements it sends.
type tracedPool struct {
	*pgxpool.Pool
	stmts atomic.Int64
}

func (p *tracedPool) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	p.stmts.Add(1)
	return ctx
}

func (p *tracedPool) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// newTracedPool returns a pool of at most 4 connections on dsn, closed at
// cleanup.
func newTracedPool(b *testing.B, dsn, label string) *tracedPool {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	p := &tracedPool{}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = "bench-" + label
	cfg.ConnConfig.Tracer = p
	if p.Pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}

// waitListening waits until a session listens on channel.
func waitListening(b *testing.B, pool *pgxpool.Pool, channel string) {
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND strpos(query, $1) > 0", channel).Scan(&n)
		if err != nil {
			b.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("no session listens on %s", channel)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tryAdvisory makes one attempt at the session advisory lock on key: on
// success it returns its release, holding the connection until then; nil
// and no error when another session holds it.
func tryAdvisory(ctx context.Context, pool *pgxpool.Pool, key string) (func(context.Context) error, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := c.QueryRow(ctx, sqlTryLock, key).Scan(&ok); err != nil {
		discard(c) // the lock may have been taken: do not pool the session
		return nil, err
	}
	if !ok {
		c.Release()
		return nil, nil
	}
	return advisoryRelease(c, key), nil
}

// advisoryRelease unlocks key on c and puts c back into its pool.
func advisoryRelease(c *pgxpool.Conn, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		var ok bool
		if err := c.QueryRow(ctx, sqlUnlock, key).Scan(&ok); err != nil {
			discard(c)
			return err
		}
		c.Release()
		if !ok {
			return errors.New("advisory lock was not held")
		}
		return nil
	}
}

// discard closes c's connection (ending its session and its advisory
// locks) and gives it back, so the pool drops it.
func discard(c *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Conn().Close(ctx)
	c.Release()
}

// alternate runs every variant once per iteration, rotating which goes
// first, and reports each one's p50 and mean latency and its p50 and mean
// relative to the variant named ref.
func alternate(b *testing.B, ref string, vs []pgVariant) {
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

// pct is the q-quantile of sorted (nearest rank).
var pct = lockbench.Pct

// BenchmarkLockHandoff: 4 goroutines, each with its own pool (as four
// processes), take one key in turn, hold it 1 ms and release it. After
// releasing, a goroutine waits until another has taken the key, and then
// for a random time below the variant's poll period (its arrival spread;
// none for push and blocking waits), before it tries again: every hand-off
// goes to a waiter already waiting, never to the releaser itself, and
// pollers poll at random phases (see handoffRound). Hand-off latency: from
// the holder's release returning to the next holder's acquisition
// returning ("handoff"; slightly negative when the waiter's wake-up beats
// the release's reply to the releaser), and from the holder starting its
// release ("gap", the time the lock served nobody); a release with nobody
// waiting is not counted. Each iteration is a round of 41 acquisitions per
// variant on a fresh key, variants in rotating order; at least 5 rounds.
// The variants:
//
//   - fxelection: lock.Locker with push wake-up (LISTEN/NOTIFY), default
//     Options;
//   - fxelection-poll-100ms: push off (Options.DisablePush), RetryPeriod
//     100ms (each wait jittered to 1–1.2 ×);
//   - advisory-poll-100ms and -10ms: pg_try_advisory_lock every 100ms /
//     10ms, a pooled connection taken per attempt and kept while held;
//   - advisory-blocking: pg_advisory_lock, which waits in the server's
//     lock manager and is granted on the holder's unlock (a connection
//     per waiter for the whole wait).
func BenchmarkLockHandoff(b *testing.B) {
	d := dsn(b)
	const waiters = 4
	fx := func(name string, spread time.Duration, opts pglease.Options, lopts lock.Options) handoffVariant {
		opts.Channel = "bench_handoff_" + strings.ReplaceAll(name, "-", "_")
		as := make([]acquirer, waiters)
		for i := range as {
			p := newTracedPool(b, d, fmt.Sprintf("%s-%d", name, i))
			be, err := pglease.New(p.Pool, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = be.Close() })
			if err := be.CreateTable(context.Background()); err != nil {
				b.Fatal(err)
			}
			lopts.Identity = fmt.Sprintf("w%d", i)
			l, err := lock.New(be, lopts)
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
		return handoffVariant{Name: name, Spread: spread, Acquirers: as}
	}
	poll := func(name string, every time.Duration) handoffVariant {
		as := make([]acquirer, waiters)
		for i := range as {
			p := newTracedPool(b, d, fmt.Sprintf("%s-%d", name, i))
			as[i] = func(ctx context.Context, key string) (func(context.Context) error, error) {
				t := time.NewTicker(every)
				defer t.Stop()
				for {
					release, err := tryAdvisory(ctx, p.Pool, key)
					if err != nil || release != nil {
						return release, err
					}
					select {
					case <-t.C:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
			}
		}
		return handoffVariant{Name: name, Spread: every, Acquirers: as}
	}
	blocking := func(name string) handoffVariant {
		as := make([]acquirer, waiters)
		for i := range as {
			p := newTracedPool(b, d, fmt.Sprintf("%s-%d", name, i))
			as[i] = func(ctx context.Context, key string) (func(context.Context) error, error) {
				c, err := p.Acquire(ctx)
				if err != nil {
					return nil, err
				}
				if _, err := c.Exec(ctx, sqlLock, key); err != nil {
					discard(c)
					return nil, err
				}
				return advisoryRelease(c, key), nil
			}
		}
		return handoffVariant{Name: name, Acquirers: as}
	}
	runHandoffBenchmark(b, []handoffVariant{
		fx("fxelection", 0, pglease.Options{}, lock.Options{}),
		fx("fxelection-poll-100ms", 100*time.Millisecond, pglease.Options{DisablePush: true}, lock.Options{Timing: fxelection.Timing{RetryPeriod: 100 * time.Millisecond}}),
		poll("advisory-poll-100ms", 100*time.Millisecond),
		poll("advisory-poll-10ms", 10*time.Millisecond),
		blocking("advisory-blocking"),
	})
}

// The hand-off benchmark's harness is shared with the other module's lock
// benchmarks (internal/lockbench).
type (
	acquirer       = lockbench.Acquirer
	handoffVariant = lockbench.Variant
)

var runHandoffBenchmark = lockbench.Run
