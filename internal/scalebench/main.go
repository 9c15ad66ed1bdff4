// Command scalebench measures many elections in one process: E electors,
// one candidate each, on one shared backend (the in-memory one, or a Redis
// or PostgreSQL server started by internal/testserver on loopback). For
// every backend and E it reports the time until all lead, the memory and
// goroutines each election costs, the process CPU, backend operations per
// second against E/RetryPeriod, round trips per RetryPeriod, and renew
// latency (p50/p99, as the elector sees it: from its renew call to the
// answer, including any wait for a batch).
//
//	go run ./internal/scalebench -backends memory,redis,postgres -n 1000,10000,100000
//
// With -document the elections come from a configuration document (package
// fxelection/config) run as an fx app, as example-app --config runs one:
// one backends entry shared by every election, its module provisioned by
// the app's start, each elector built by config.Build. A wrapper module
// (fxelection.backends.scalebench.counted) counts the calls between the
// config package's backend and the real one, as the coded mode counts
// between the electors and the backend. The module's client is created at
// Provision, after the baseline, so its memory counts in the per-election
// figures (a few hundred KiB over E).
//
// With -overload D, a phase follows the steady window: GOMAXPROCS busy
// loops hold the process's CPU and, on Redis, a latency proxy between the
// client and the server adds -overload-latency to each direction, for D;
// then both stop, and the bench reports the leaderships lost during and
// after, how long until every election led again, renew p99 during and
// after, and round trips per RetryPeriod (a second table):
//
//	go run ./internal/scalebench -backends redis -n 100000 -overload 30s
//
// Each (backend, E) runs in a fresh child process (the command re-executes
// itself), so that memory left behind by one run does not count in the
// next. Memory per election is the difference from a baseline taken after
// the backend and its client are set up, divided by E. RSS is as the
// kernel reports it at the end of the measuring window (no forced GC);
// heap is live heap after a forced GC.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/testserver"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

type options struct {
	backends    string
	counts      string
	lease       time.Duration
	deadline    time.Duration
	retry       time.Duration
	periods     int
	leadTimeout time.Duration
	pgConns     int
	child       string
	memProfile  string
	memRate     int
	progress    bool
	cpuProfile  string
	document    bool

	overload        time.Duration
	overloadLoops   int
	overloadLatency time.Duration
	recoverTimeout  time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.backends, "backends", "memory,redis,postgres", "backends to measure: memory, redis, postgres")
	flag.StringVar(&o.counts, "n", "1000,10000,100000", "numbers of elections")
	flag.DurationVar(&o.lease, "lease", 15*time.Second, "LeaseDuration")
	flag.DurationVar(&o.deadline, "deadline", 10*time.Second, "RenewDeadline")
	flag.DurationVar(&o.retry, "retry", 2*time.Second, "RetryPeriod")
	flag.IntVar(&o.periods, "periods", 5, "measuring window, in retry periods")
	flag.DurationVar(&o.leadTimeout, "lead-timeout", 2*time.Minute, "give up waiting for all to lead after this")
	flag.IntVar(&o.pgConns, "pg-conns", 0, "Postgres pool size (0: pgxpool's default)")
	flag.StringVar(&o.child, "child", "", "internal: run one measurement, backend:n")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measuring window to this file (with -child)")
	flag.StringVar(&o.memProfile, "memprofile", "", "write a heap profile of the steady state to this file (with -child)")
	flag.BoolVar(&o.progress, "progress", false, "print leaders, renewals, errors, losses and goroutines every second on stderr (with -child)")
	flag.BoolVar(&o.document, "document", false, "build the elections from a configuration document run as an fx app (config.Build) instead of fxelection.New")
	flag.DurationVar(&o.overload, "overload", 0, "after the steady window, an overload phase this long: busy loops hold the CPU and the store is slowed (Redis, through a proxy); 0: none")
	flag.IntVar(&o.overloadLoops, "overload-loops", 0, "busy loops during the overload phase (0: GOMAXPROCS)")
	flag.DurationVar(&o.overloadLatency, "overload-latency", 20*time.Millisecond, "latency the proxy adds to every chunk to and from Redis during the overload phase")
	flag.DurationVar(&o.recoverTimeout, "recover-timeout", 2*time.Minute, "after the overload phase, give up waiting for every election to lead again after this")
	flag.IntVar(&o.memRate, "memprofilerate", 0, "runtime.MemProfileRate for -memprofile (0: the runtime's default; 1: every allocation)")
	flag.Parse()
	if o.memRate > 0 {
		runtime.MemProfileRate = o.memRate
	}
	if o.child != "" {
		if err := runChild(o); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			os.Exit(1)
		}
		return
	}
	if err := runParent(o); err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}

// result is one child's measurement.
type result struct {
	Backend        string  `json:"backend"`
	N              int     `json:"n"`
	AllLead        bool    `json:"all_lead"`
	Leading        int64   `json:"leading"`
	LeadSeconds    float64 `json:"lead_s"`
	RSSPerEl       float64 `json:"rss_per_el"`   // bytes
	HeapPerEl      float64 `json:"heap_per_el"`  // bytes, live after GC
	StackPerEl     float64 `json:"stack_per_el"` // bytes
	GoroutPerEl    float64 `json:"goroutines_per_el"`
	CPUCores       float64 `json:"cpu_cores"`
	OpsPerSec      float64 `json:"ops_per_s"`
	Expected       float64 `json:"expected_ops_per_s"` // E/RetryPeriod
	RoundTrips     float64 `json:"round_trips_per_period"`
	RenewP50       float64 `json:"renew_p50_ms"`
	RenewP99       float64 `json:"renew_p99_ms"`
	RenewMax       float64 `json:"renew_max_ms"`
	Renewals       int64   `json:"renewals"`
	MeanBatch      float64 `json:"mean_batch"`
	BatchP99       float64 `json:"batch_call_p99_ms"`
	RenewErrors    int64   `json:"renew_errors"`
	Lost           int64   `json:"lost"`
	StopSeconds    float64 `json:"stop_s"`
	LeftGoroutine  int     `json:"left_goroutines"`
	PeakGoroutines float64 `json:"peak_goroutines_per_el"` // during start-up
	Classes        string  `json:"memory_classes_per_el"`
	LoadBefore     string  `json:"load_before"`
	LoadAfter      string  `json:"load_after"`

	Overload *overloadResult `json:"overload,omitempty"`
}

func runParent(o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	mode := "coded (fxelection.New)"
	if o.document {
		mode = "document (config.Build, one fx app)"
	}
	fmt.Printf("# scalebench: %s; LeaseDuration %v, RenewDeadline %v, RetryPeriod %v, window %d retry periods, GOMAXPROCS %d, %s\n",
		mode, o.lease, o.deadline, o.retry, o.periods, runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Println("| backend | elections | all lead after | RSS/election | heap/election | stack/election | goroutines/election | CPU (cores) | ops/s (E/RetryPeriod) | round trips/RetryPeriod | renew p50 | renew p99 | lost | load avg |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var overloads []string
	defer func() {
		if len(overloads) == 0 {
			return
		}
		fmt.Println()
		fmt.Println("| backend | elections | overload | leaderships lost during (fewest led) | lost after | every election led again after | renew p99 during | renew p99 after | round trips/RetryPeriod during → after |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|")
		for _, l := range overloads {
			fmt.Println(l)
		}
	}()
	for _, be := range strings.Split(o.backends, ",") {
		for _, ns := range strings.Split(o.counts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(ns))
			if err != nil {
				return fmt.Errorf("-n: %w", err)
			}
			args := []string{"-child", strings.TrimSpace(be) + ":" + strconv.Itoa(n),
				"-lease", o.lease.String(), "-deadline", o.deadline.String(), "-retry", o.retry.String(),
				"-periods", strconv.Itoa(o.periods), "-lead-timeout", o.leadTimeout.String(),
				"-pg-conns", strconv.Itoa(o.pgConns)}
			if o.document {
				args = append(args, "-document")
			}
			if o.progress {
				args = append(args, "-progress")
			}
			if o.overload > 0 {
				args = append(args, "-overload", o.overload.String(), "-overload-loops", strconv.Itoa(o.overloadLoops),
					"-overload-latency", o.overloadLatency.String(), "-recover-timeout", o.recoverTimeout.String())
			}
			cmd := exec.Command(self, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Printf("| %s | %d | failed: %v | | | | | | | | | | | |\n", be, n, err)
				continue
			}
			var r result
			if err := json.Unmarshal(lastLine(out.Bytes()), &r); err != nil {
				return fmt.Errorf("child output %q: %w", out.String(), err)
			}
			lead := fmt.Sprintf("%.2f s", r.LeadSeconds)
			if !r.AllLead {
				lead = fmt.Sprintf("only %d led within %v", r.Leading, o.leadTimeout)
			}
			fmt.Printf("| %s | %d | %s | %.1f KiB | %.2f KB | %.2f KiB | %.2f | %.3f | %.0f (%.0f) | %.0f | %.2f ms | %.2f ms | %d | %s → %s |\n",
				r.Backend, r.N, lead, r.RSSPerEl/1024, r.HeapPerEl/1000, r.StackPerEl/1024, r.GoroutPerEl,
				r.CPUCores, r.OpsPerSec, r.Expected, r.RoundTrips, r.RenewP50, r.RenewP99, r.Lost, r.LoadBefore, r.LoadAfter)
			if r.Overload != nil {
				overloads = append(overloads, overloadLine(r.Backend, r.N, r.Overload))
			}
		}
	}
	return nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// counting wraps a backend and counts its calls: each call is one round
// trip to the store (a batch call counts once).
type counting struct {
	b          fxelection.Backend
	roundTrips atomic.Int64
	batches    atomic.Int64 // RenewBatch calls
	batched    atomic.Int64 // leases in them
	batchTime  histogram    // RenewBatch call durations

	acquireBatches atomic.Int64 // AcquireBatch calls
	acquired       atomic.Int64 // requests in them
}

func (c *counting) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	c.roundTrips.Add(1)
	return c.b.Acquire(ctx, req)
}

func (c *counting) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	c.roundTrips.Add(1)
	return c.b.Renew(ctx, l)
}

func (c *counting) Release(ctx context.Context, l fxelection.Lease) error {
	c.roundTrips.Add(1)
	return c.b.Release(ctx, l)
}

func (c *counting) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	c.roundTrips.Add(1)
	return c.b.Get(ctx, election)
}

// countCalls wraps inner in a counting backend with the batch
// capabilities inner has, returned both as the Backend to use and as the
// counters.
func countCalls(inner fxelection.Backend) (fxelection.Backend, *counting) {
	be := &counting{b: inner}
	if _, ok := inner.(backendkit.BatchRenewer); !ok {
		return be, be
	}
	if _, ok := inner.(backendkit.BatchAcquirer); ok {
		return countingAcquire{countingBatch{be}}, be
	}
	return countingBatch{be}, be
}

// countingBatch is counting for a backend with the batch capability,
// which it forwards.
type countingBatch struct{ *counting }

// RenewBatch forwards the batch capability, as one round trip.
func (c countingBatch) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	c.roundTrips.Add(1)
	c.batches.Add(1)
	c.batched.Add(int64(len(leases)))
	start := time.Now()
	defer func() { c.batchTime.add(time.Since(start)) }()
	if br, ok := c.b.(backendkit.BatchRenewer); ok {
		return br.RenewBatch(ctx, leases)
	}
	out := make([]backendkit.RenewResult, len(leases))
	for i, l := range leases {
		out[i].Lease, out[i].Err = c.b.Renew(ctx, l)
	}
	return out
}

// countingAcquire is countingBatch for a backend that acquires in batches
// too.
type countingAcquire struct{ countingBatch }

// AcquireBatch forwards the batch capability, as one round trip.
func (c countingAcquire) AcquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	c.roundTrips.Add(1)
	c.acquireBatches.Add(1)
	c.acquired.Add(int64(len(reqs)))
	return c.b.(backendkit.BatchAcquirer).AcquireBatch(ctx, reqs)
}

func (c *counting) BackendName() string {
	if n, ok := c.b.(backendkit.NamedBackend); ok {
		return n.BackendName()
	}
	return "custom"
}

func (c *counting) Subscribe(election string, wake func()) (cancel func()) {
	if n, ok := c.b.(backendkit.Notifier); ok {
		return n.Subscribe(election, wake)
	}
	return func() {}
}

// observer counts leaderships and operations and keeps a histogram of
// renew latency; one is shared by every elector.
type observer struct {
	leading, lost, ops, renewals, renewErrs atomic.Int64
	hist                                    histogram
}

func (o *observer) Observe(ev fxelection.Event) {
	switch ev.Kind {
	case fxelection.EventStartedLeading:
		o.leading.Add(1)
	case fxelection.EventStoppedLeading:
		o.leading.Add(-1)
		if ev.Reason != fxelection.ReasonStopped {
			o.lost.Add(1)
		}
	case fxelection.EventOperation:
		o.ops.Add(1)
		if ev.Op == backendkit.OpRenew {
			if ev.Err != nil {
				o.renewErrs.Add(1)
			} else {
				o.renewals.Add(1)
				o.hist.add(ev.Duration)
			}
		}
	}
}

// histogram buckets durations on a log scale, 5% wide, from 1µs to ~2 min.
type histogram struct {
	b [420]atomic.Int64
}

const histGrowth = 1.05

func (h *histogram) add(d time.Duration) {
	i := 0
	if us := float64(d) / float64(time.Microsecond); us > 1 {
		i = int(math.Log(us) / math.Log(histGrowth))
	}
	h.b[min(i, len(h.b)-1)].Add(1)
}

func (h *histogram) reset() {
	for i := range h.b {
		h.b[i].Store(0)
	}
}

// quantile returns the upper edge of the bucket holding quantile q, in ms.
func (h *histogram) quantile(q float64) float64 {
	var total int64
	for i := range h.b {
		total += h.b[i].Load()
	}
	if total == 0 {
		return -1 // no renewal succeeded
	}
	want := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i := range h.b {
		seen += h.b[i].Load()
		if seen >= want {
			return math.Pow(histGrowth, float64(i+1)) / 1000
		}
	}
	return -1
}

type snapshot struct {
	rss        int64 // bytes
	classes    []metrics.Sample
	heap       uint64
	stack      uint64
	goroutines int
	cpu        time.Duration
}

func takeSnapshot(gc bool) snapshot {
	s := snapshot{rss: rss(), classes: readClasses()}
	if gc {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heap, s.stack = ms.HeapAlloc, ms.StackInuse
	s.goroutines = runtime.NumGoroutine()
	s.cpu = cpuTime()
	return s
}

// memClasses are the runtime's memory classes scalebench reports per
// election on stderr (before the forced GC), to show where RSS goes.
var memClasses = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/gc/heap/goal:bytes",
	"/sched/goroutines-created:goroutines",
}

func readClasses() []metrics.Sample {
	s := make([]metrics.Sample, len(memClasses))
	for i, name := range memClasses {
		s[i].Name = name
	}
	metrics.Read(s)
	return s
}

// classDiff formats the memory classes of end minus base, per election.
func classDiff(base, end snapshot, n int) string {
	var b strings.Builder
	for i := range end.classes {
		name := strings.TrimPrefix(strings.TrimPrefix(end.classes[i].Name, "/memory/classes/"), "/")
		v0, v1 := base.classes[i].Value, end.classes[i].Value
		if v0.Kind() != metrics.KindUint64 || v1.Kind() != metrics.KindUint64 {
			continue
		}
		fmt.Fprintf(&b, " %s %.0f;", name, (float64(v1.Uint64())-float64(v0.Uint64()))/float64(n))
	}
	return b.String()
}

func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return "?"
	}
	return f[0]
}

// setup starts the store for kind and returns a backend on it and a
// function that tears everything down.
func setup(ctx context.Context, kind string, pgConns int) (fxelection.Backend, func(), slowStore, error) {
	switch kind {
	case "memory":
		return memory.New(), func() {}, nil, nil
	case "redis":
		srv, err := testserver.StartRedis(testserver.RedisOptions{})
		if err != nil {
			return nil, nil, nil, err
		}
		// Through a proxy, which adds latency in the overload phase.
		proxy, err := newLatencyProxy(srv.Addr())
		if err != nil {
			_ = srv.Close()
			return nil, nil, nil, err
		}
		client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true})
		be, err := redislease.New(client, redislease.Options{})
		if err != nil {
			_ = client.Close()
			_ = proxy.Close()
			_ = srv.Close()
			return nil, nil, nil, err
		}
		return be, func() { _ = client.Close(); _ = proxy.Close(); _ = srv.Close() }, proxy.SetLatency, nil
	case "postgres":
		srv, err := testserver.StartPostgres(testserver.PostgresOptions{})
		if err != nil {
			return nil, nil, nil, err
		}
		cfg, err := pgxpool.ParseConfig(srv.DSN())
		if err != nil {
			_ = srv.Close()
			return nil, nil, nil, err
		}
		if pgConns > 0 {
			cfg.MaxConns = int32(pgConns)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			_ = srv.Close()
			return nil, nil, nil, err
		}
		be, err := pglease.New(pool, pglease.Options{})
		if err != nil {
			pool.Close()
			_ = srv.Close()
			return nil, nil, nil, err
		}
		if err := be.CreateTable(ctx); err != nil {
			pool.Close()
			_ = srv.Close()
			return nil, nil, nil, err
		}
		return be, func() { _ = be.Close(); pool.Close(); _ = srv.Close() }, nil, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown backend %q", kind)
}

func runChild(o options) error {
	kind, ns, ok := strings.Cut(o.child, ":")
	if !ok {
		return errors.New("-child wants backend:n")
	}
	n, err := strconv.Atoi(ns)
	if err != nil {
		return err
	}
	ctx := context.Background()
	obs := &observer{}
	res := result{Backend: kind, N: n, LoadBefore: loadAvg(), Expected: float64(n) / o.retry.Seconds()}
	var (
		be       *counting
		electors []*fxelection.Elector
		base     snapshot
		startAll func() error // starts every elector
		stopAll  func()       // stops every elector
		slow     slowStore    // adds latency to the store (nil: cannot)
	)
	if o.document {
		res.Backend = kind + " (document)"
		inner, teardown, err := moduleFor(kind)
		if err != nil {
			return err
		}
		defer teardown()
		debug.FreeOSMemory()
		base = takeSnapshot(true)
		app, es, err := documentApp(o, inner, n)
		if err != nil {
			return err
		}
		for _, e := range es {
			e.AddObserver(obs)
		}
		electors = es
		startAll = func() error {
			if err := app.Start(ctx); err != nil {
				return err
			}
			be = lastCounted.Load()
			return nil
		}
		stopAll = func() {
			if err := app.Stop(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "scalebench: stop:", err)
			}
		}
	} else {
		inner, teardown, slowFn, err := setup(ctx, kind, o.pgConns)
		slow = slowFn
		if err != nil {
			return err
		}
		defer teardown()
		var shared fxelection.Backend
		shared, be = countCalls(inner)

		// Warm the client up (connections, scripts) before the baseline.
		warm, err := be.Acquire(ctx, backendkit.AcquireRequest{Election: "warm-up", Identity: "bench", Duration: o.lease})
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		_ = be.Release(ctx, warm)
		debug.FreeOSMemory()
		base = takeSnapshot(true)

		group, err := fxelection.NewGroup(shared)
		if err != nil {
			return err
		}
		electors = make([]*fxelection.Elector, n)
		for i := range electors {
			e, err := group.New(fxelection.Config{
				Name: "e" + strconv.Itoa(i), Identity: "bench",
				Timing: fxelection.Timing{LeaseDuration: o.lease, RenewDeadline: o.deadline, RetryPeriod: o.retry},
			})
			if err != nil {
				return err
			}
			e.AddObserver(obs)
			electors[i] = e
		}
		startAll = func() error {
			for _, e := range electors {
				if err := e.Start(ctx); err != nil {
					return err
				}
			}
			return nil
		}
		stopAll = func() {
			var wg sync.WaitGroup
			next := atomic.Int64{}
			for range 64 {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
						_ = electors[i].Stop(ctx)
					}
				})
			}
			wg.Wait()
		}
	}
	// Sample the goroutine count during start-up: goroutines that exist
	// together leave their descriptors (and, for a while, their stacks)
	// behind.
	var peakG atomic.Int64
	samplerDone := make(chan struct{})
	samplerStop := make(chan struct{})
	go func() {
		defer close(samplerDone)
		for {
			if g := int64(runtime.NumGoroutine()); g > peakG.Load() {
				peakG.Store(g)
			}
			select {
			case <-samplerStop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	if o.progress {
		go func() {
			for t0 := time.Now(); ; time.Sleep(time.Second) {
				fmt.Fprintf(os.Stderr, "%5.1fs leading %d renewals %d errors %d lost %d goroutines %d\n", time.Since(t0).Seconds(),
					obs.leading.Load(), obs.renewals.Load(), obs.renewErrs.Load(), obs.lost.Load(), runtime.NumGoroutine())
			}
		}()
	}
	start := time.Now()
	if err := startAll(); err != nil {
		return err
	}
	limit := time.Now().Add(o.leadTimeout)
	for obs.leading.Load() < int64(n) && time.Now().Before(limit) {
		time.Sleep(5 * time.Millisecond)
	}
	res.Leading = obs.leading.Load()
	res.AllLead = res.Leading >= int64(n)
	res.LeadSeconds = time.Since(start).Seconds()
	close(samplerStop)
	<-samplerDone
	res.PeakGoroutines = float64(peakG.Load()-int64(base.goroutines)) / float64(n)

	// Let the first renewals (spread over the first retry period) happen,
	// then measure a steady window.
	time.Sleep(o.retry)
	obs.hist.reset()
	be.batchTime.reset()
	b0, bl0 := be.batches.Load(), be.batched.Load()
	rt0, ops0, ren0, err0, lost0 := be.roundTrips.Load(), obs.ops.Load(), obs.renewals.Load(), obs.renewErrs.Load(), obs.lost.Load()
	cpu0, t0 := cpuTime(), time.Now()
	if o.cpuProfile != "" {
		if f, err := os.Create(o.cpuProfile); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
			}
		}
	}
	time.Sleep(time.Duration(o.periods) * o.retry)
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	window := time.Since(t0)
	cpu1 := cpuTime()
	rt1, ops1, ren1, err1, lost1 := be.roundTrips.Load(), obs.ops.Load(), obs.renewals.Load(), obs.renewErrs.Load(), obs.lost.Load()
	end := takeSnapshot(true)
	if o.memProfile != "" {
		if f, err := os.Create(o.memProfile); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}

	if b := be.batches.Load() - b0; b > 0 {
		res.MeanBatch = float64(be.batched.Load()-bl0) / float64(b)
		res.BatchP99 = be.batchTime.quantile(0.99)
	}
	res.CPUCores = (cpu1 - cpu0).Seconds() / window.Seconds()
	res.OpsPerSec = float64(ops1-ops0) / window.Seconds()
	res.RoundTrips = float64(rt1-rt0) / (window.Seconds() / o.retry.Seconds())
	res.Renewals, res.RenewErrors, res.Lost = ren1-ren0, err1-err0, lost1-lost0
	res.RenewP50, res.RenewP99, res.RenewMax = obs.hist.quantile(0.5), obs.hist.quantile(0.99), obs.hist.quantile(1)
	res.RSSPerEl = float64(end.rss-base.rss) / float64(n)
	res.HeapPerEl = (float64(end.heap) - float64(base.heap)) / float64(n)
	res.StackPerEl = (float64(end.stack) - float64(base.stack)) / float64(n)
	res.GoroutPerEl = float64(end.goroutines-base.goroutines) / float64(n)
	res.Classes = classDiff(base, end, n)

	if o.overload > 0 {
		res.Overload = overloadPhase(o, n, obs, be, slow)
	}

	stopStart := time.Now()
	stopped := make(chan struct{})
	go func() { stopAll(); close(stopped) }()
	select {
	case <-stopped:
		res.StopSeconds = time.Since(stopStart).Seconds()
		time.Sleep(100 * time.Millisecond)
		res.LeftGoroutine = runtime.NumGoroutine() - base.goroutines
	case <-time.After(o.leadTimeout):
		res.StopSeconds, res.LeftGoroutine = -1, -1 // gave up
	}
	res.LoadAfter = loadAvg()
	fmt.Fprintf(os.Stderr, "%s E=%d: all lead %v after %.2fs; renewals %d (errors %d); mean batch %.1f, batch call p99 %.2f ms; stop %.2fs; goroutines left %d; peak goroutines at start-up %.2f per election; per election at the end (bytes):%s\n",
		kind, n, res.AllLead, res.LeadSeconds, res.Renewals, res.RenewErrors, res.MeanBatch, res.BatchP99, res.StopSeconds, res.LeftGoroutine, res.PeakGoroutines, res.Classes)
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
