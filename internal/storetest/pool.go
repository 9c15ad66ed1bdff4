package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/pool"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// PoolOptions tune CheckPool; zero fields take the defaults.
type PoolOptions struct {
	// Shards and Workers: the pool's size before the extra worker joins.
	// Defaults: 256 shards, 4 workers.
	Shards, Workers int
	// Timing of the shards and member records. Default: LeaseDuration 3s,
	// RenewDeadline 2s, RetryPeriod 500ms.
	Timing electiontest.Timing
	// Slack is added to every time bound: scheduling on a loaded machine
	// (0 on fake time, where the bounds are exact).
	Slack time.Duration
	// ChaosRounds is how many rounds of the chaos phase run: each cuts a
	// random worker off the store for a random time up to twice
	// LeaseDuration, then heals it. Default: 6. ChaosSeed seeds the
	// choices (0: random; the seed is logged).
	ChaosRounds int
	ChaosSeed   uint64
}

// PoolFigures are what CheckPool measured.
type PoolFigures struct {
	// Spread is the time from the last worker's start until every worker
	// held its share ±1; Join the time from the extra worker's start until
	// every worker held floor or ceil of the new share; Failover the time
	// from a worker's partition until its shards were all owned again.
	Spread, Join, Failover time.Duration
	// MaxGap is the longest time a shard had no owner while shards moved
	// to the worker that joined.
	MaxGap time.Duration
	// Moves is how many shards were handed over in all.
	Moves uint64
}

// CheckPool runs a pool of Workers workers over Shards shards on the
// backends newBackend makes (one per worker, as separate processes would
// have), and checks the pool's promises:
//
//   - every worker holds ceil or floor of Shards/Workers, ±1, within three
//     RetryPeriods of the last start;
//   - when one more worker joins, every worker holds floor or ceil of the
//     new share within five RetryPeriods, and no shard is without an owner
//     for longer than one RetryPeriod meanwhile;
//   - when a worker is cut off from the store (a partition, which is what
//     a killed process looks like to the store; CheckPoolKill kills a real
//     one), its shards are all owned again within LeaseDuration plus two
//     RetryPeriods;
//   - after a chaos phase (ChaosRounds workers cut off and healed in
//     turn), every worker holds its share ±1 again within LeaseDuration
//     plus eight RetryPeriods;
//   - never two believing owners of a shard at once, and each shard's terms
//     strictly increase, throughout.
//
// Each bound gets opts.Slack on top. It works on fake time (testing/synctest
// with the in-memory backend) as well as against real stores.
func CheckPool(t *testing.T, newBackend electiontest.NewBackend, opts PoolOptions) PoolFigures {
	t.Helper()
	opts.Shards, opts.Workers, opts.Timing = poolDefaults(opts.Shards, opts.Workers, opts.Timing)
	tm := opts.Timing
	name := electiontesting.Election(t)
	ps := newPoolShards(opts.Shards)
	type worker struct {
		p     *pool.Pool
		fault *faultinject.Backend
	}
	var workers []*worker
	startWorker := func(i int) *worker {
		f := faultinject.New(newBackend(t))
		w := &worker{p: ps.startWorker(t, name, fmt.Sprintf("w%d", i), tm, f), fault: f}
		workers = append(workers, w)
		return w
	}
	defer func() {
		for _, w := range workers {
			ctx, cancel := context.WithTimeout(context.Background(), 2*tm.RenewDeadline)
			_ = w.p.Stop(ctx) // a partitioned worker cannot release
			cancel()
		}
	}()
	// waitShare waits until the workers ws hold every shard, each between
	// lo and hi, and returns how long it took.
	waitShare := func(what string, ws []*worker, lo, hi int, since time.Time, limit time.Duration) time.Duration {
		t.Helper()
		pools := make([]*pool.Pool, len(ws))
		for i, w := range ws {
			pools[i] = w.p
		}
		return waitPoolShare(t, what, func() []int { return ownedCounts(pools) }, opts.Shards, lo, hi, since, limit, func() string {
			return fmt.Sprintf("workers: %+v", poolStatuses(pools))
		})
	}
	var fig PoolFigures

	for i := range opts.Workers {
		startWorker(i)
	}
	lastStart := time.Now()
	share := opts.Shards / opts.Workers
	fig.Spread = waitShare("spread", workers, share-1, (opts.Shards+opts.Workers-1)/opts.Workers+1, lastStart, 3*tm.RetryPeriod+opts.Slack)

	// One more joins: the others hand shards over to it.
	joined := time.Now()
	startWorker(opts.Workers)
	w := opts.Workers + 1
	fig.Join = waitShare("join", workers, opts.Shards/w, (opts.Shards+w-1)/w, joined, 5*tm.RetryPeriod+opts.Slack)
	for s, rec := range ps.recs {
		iv := rec.Intervals()
		for i := 1; i < len(iv); i++ {
			if iv[i-1].End.IsZero() || iv[i].Start.Before(joined) {
				continue
			}
			gap := iv[i].Start.Sub(iv[i-1].End)
			fig.MaxGap = max(fig.MaxGap, gap)
			if gap > tm.RetryPeriod+opts.Slack {
				t.Errorf("shard %s had no owner for %v while shards moved (from %s to %s), want at most RetryPeriod %v", s, gap, iv[i-1].Identity, iv[i].Identity, tm.RetryPeriod)
			}
		}
	}

	// One is cut off from the store, as a killed process would be
	// (CheckPoolKill kills one for real).
	cut := time.Now()
	workers[0].fault.Partition(true)
	fig.Failover = waitShare("failover", workers[1:], 0, opts.Shards, cut, tm.LeaseDuration+2*tm.RetryPeriod+opts.Slack)

	// Chaos: the cut-off worker comes back; then random workers are cut
	// off and healed. Afterwards every shard is owned again.
	workers[0].fault.Partition(false)
	rounds, seed := opts.ChaosRounds, opts.ChaosSeed
	if rounds == 0 {
		rounds = 6
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("pool chaos: %d rounds, seed %d", rounds, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for range rounds {
		w := workers[rng.IntN(len(workers))]
		w.fault.Partition(true)
		time.Sleep(time.Duration(rng.Int64N(int64(2 * tm.LeaseDuration))))
		w.fault.Partition(false)
		time.Sleep(time.Duration(rng.Int64N(int64(tm.LeaseDuration))))
	}
	healed := time.Now()
	n := len(workers)
	waitShare("after chaos", workers, opts.Shards/n-1, (opts.Shards+n-1)/n+1, healed, tm.LeaseDuration+8*tm.RetryPeriod+opts.Slack)

	for _, w := range workers {
		fig.Moves += w.p.Status().Moves
	}
	ps.check(t)
	t.Logf("pool of %d shards: spread over %d workers in %v; a worker joined, spread in %v with %d moves, longest gap %v; a worker cut off, its shards re-owned in %v (RetryPeriod %v, LeaseDuration %v)",
		opts.Shards, opts.Workers, fig.Spread, fig.Join, fig.Moves, fig.MaxGap, fig.Failover, tm.RetryPeriod, tm.LeaseDuration)
	return fig
}

// poolDefaults fills in the zero values of a pool check's size and timing.
func poolDefaults(shards, workers int, tm electiontest.Timing) (int, int, electiontest.Timing) {
	if shards == 0 {
		shards = 256
	}
	if workers == 0 {
		workers = 4
	}
	if tm.LeaseDuration == 0 {
		tm = electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}
	}
	return shards, workers, tm
}

// poolShards are a checked pool's shard names, with a recorder per shard
// that every in-process worker's elector of that shard reports to.
type poolShards struct {
	names []string
	recs  map[string]*electiontesting.Recorder
}

func newPoolShards(n int) *poolShards {
	ps := &poolShards{names: make([]string, n), recs: make(map[string]*electiontesting.Recorder, n)}
	for i := range ps.names {
		ps.names[i] = poolShardName(i)
		ps.recs[ps.names[i]] = &electiontesting.Recorder{}
	}
	return ps
}

// poolShardName is the name of a checked pool's shard i.
func poolShardName(i int) string { return fmt.Sprintf("s%03d", i) }

// startWorker starts a worker of pool name on backend, its shards'
// electors observed by the recorders. The caller stops it.
func (ps *poolShards) startWorker(t *testing.T, name, identity string, tm electiontest.Timing, backend fxelection.Backend) *pool.Pool {
	t.Helper()
	p, err := pool.New(pool.Config{
		Name: name, Shards: ps.names, Identity: identity,
		Timing: fxelection.Timing{
			LeaseDuration: tm.LeaseDuration,
			RenewDeadline: tm.RenewDeadline,
			RetryPeriod:   tm.RetryPeriod,
		},
	}, backend)
	if err != nil {
		t.Fatalf("pool.New: %v", err)
	}
	for _, s := range ps.names {
		p.Elector(s).AddObserver(ps.recs[s])
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("pool Start: %v", err)
	}
	return p
}

// check fails t for a shard that had two believing owners at once among
// the observed workers, or whose terms did not strictly increase.
func (ps *poolShards) check(t *testing.T) {
	t.Helper()
	for _, s := range ps.names {
		rec := ps.recs[s]
		if a, b, found := rec.Overlap(); found {
			t.Errorf("shard %s: two owners at once: %+v and %+v", s, a, b)
		}
		var last uint64
		for _, iv := range rec.Intervals() {
			if iv.Term <= last {
				t.Errorf("shard %s: terms not increasing: %+v", s, rec.Intervals())
				break
			}
			last = iv.Term
		}
	}
}

// ownedCounts returns how many shards each of ps owns.
func ownedCounts(ps []*pool.Pool) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = len(p.Owned())
	}
	return out
}

func poolStatuses(ps []*pool.Pool) []pool.Status {
	out := make([]pool.Status, len(ps))
	for i, p := range ps {
		out[i] = p.Status()
	}
	return out
}

// waitPoolShare polls counts (shards per worker) until the workers hold
// total shards in all, each between lo and hi, and returns the time since
// since; past limit it fails t with the counts and detail().
func waitPoolShare(t *testing.T, what string, counts func() []int, total, lo, hi int, since time.Time, limit time.Duration, detail func() string) time.Duration {
	t.Helper()
	for {
		c := counts()
		sum := 0
		for _, n := range c {
			sum += n
		}
		if sum == total && slices.Min(c) >= lo && slices.Max(c) <= hi {
			return time.Since(since)
		}
		if time.Since(since) > limit {
			t.Fatalf("%s: shards per worker %v after %v, want %d..%d each and %d in all (%s)", what, c, limit, lo, hi, total, detail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
