package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/pool"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// PoolChildEnv is the environment variable through which CheckPoolKill
// hands its child process the worker to run (RunPoolChild reads it). It is
// set only in the child's environment.
const PoolChildEnv = "FXELECTION_POOL_CHILD"

// PoolKillOptions tune CheckPoolKill; zero fields take the defaults.
type PoolKillOptions struct {
	// Shards and Workers: the pool's size, the child process included.
	// Defaults: 256 shards, 4 workers.
	Shards, Workers int
	// Timing of the shards and member records. Default: LeaseDuration 3s,
	// RenewDeadline 2s, RetryPeriod 500ms.
	Timing electiontest.Timing
	// Slack is added to every time bound: scheduling on a loaded machine.
	Slack time.Duration
	// Addr is what the child's RunPoolChild passes to its backend
	// constructor: the store's address, a DSN.
	Addr string
	// ChildTest is the test of the same test binary the child runs, which
	// calls RunPoolChild. Default: "TestPoolChild".
	ChildTest string
	// Startup bounds the child's start-up, from its exec until it holds a
	// member slot (a race-instrumented test binary connecting to the
	// store). Default: one minute.
	Startup time.Duration
}

// poolChildConfig is what the child reads from PoolChildEnv.
type poolChildConfig struct {
	Addr     string              `json:"addr"`
	Pool     string              `json:"pool"`
	Identity string              `json:"identity"`
	Shards   int                 `json:"shards"`
	Timing   electiontest.Timing `json:"timing"`
}

// InPoolChild reports whether this process is the child CheckPoolKill
// started: a TestMain that starts servers of its own skips them then (the
// child uses its parent's).
func InPoolChild() bool { return os.Getenv(PoolChildEnv) != "" }

// RunPoolChild is the child's side of CheckPoolKill, the body of the test
// named by PoolKillOptions.ChildTest (TestPoolChild). Outside the child
// (PoolChildEnv unset) it returns at once, and the test passes. In the
// child it makes a backend with newBackend(t, PoolKillOptions.Addr), starts
// the pool worker the parent described, and runs it until the parent kills
// the process; should the parent die first (the child's standard input
// reaches its end), it stops the worker and returns.
func RunPoolChild(t *testing.T, newBackend func(t *testing.T, addr string) fxelection.Backend) {
	t.Helper()
	v := os.Getenv(PoolChildEnv)
	if v == "" {
		return
	}
	var c poolChildConfig
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		t.Fatalf("%s: %v", PoolChildEnv, err)
	}
	shards := make([]string, c.Shards)
	for i := range shards {
		shards[i] = poolShardName(i)
	}
	p, err := pool.New(pool.Config{
		Name: c.Pool, Shards: shards, Identity: c.Identity,
		Timing: fxelection.Timing{
			LeaseDuration: c.Timing.LeaseDuration,
			RenewDeadline: c.Timing.RenewDeadline,
			RetryPeriod:   c.Timing.RetryPeriod,
		},
	}, newBackend(t, c.Addr))
	if err != nil {
		t.Fatalf("pool.New: %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("pool Start: %v", err)
	}
	fmt.Fprintf(os.Stderr, "pool child %s (pid %d): started\n", c.Identity, os.Getpid())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent is gone
	ctx, cancel := context.WithTimeout(context.Background(), 2*c.Timing.RenewDeadline)
	defer cancel()
	_ = p.Stop(ctx)
}

// CheckPoolKill checks that the shards of a pool worker killed with SIGKILL
// are owned again within LeaseDuration plus two RetryPeriods (plus Slack),
// and returns that failover time. Workers-1 workers run in this process,
// each on a backend newBackend makes; one more runs in a child process: the
// test binary itself, running only opts.ChildTest (which calls
// RunPoolChild) with the pool's description in PoolChildEnv.
//
// Once the child holds a member slot (within opts.Startup of its exec),
// every worker must hold its share ±1 — the child's counted from the
// store with Backend.Get — within five RetryPeriods; then the child is
// killed (os.Process.Kill: SIGKILL on Unix), so it releases nothing, and
// the clock runs until every shard the store showed it holding is owned by
// a worker of this process, with a term above the child's. Throughout, no
// shard has two believing owners among this process's workers and each
// shard's terms strictly increase. The child is killed and reaped when the
// test ends, whatever happens; its output is logged if the test failed.
func CheckPoolKill(t *testing.T, newBackend electiontest.NewBackend, opts PoolKillOptions) time.Duration {
	t.Helper()
	opts.Shards, opts.Workers, opts.Timing = poolDefaults(opts.Shards, opts.Workers, opts.Timing)
	if opts.Workers < 2 {
		t.Fatalf("CheckPoolKill: Workers must be at least 2 (is %d)", opts.Workers)
	}
	if opts.ChildTest == "" {
		opts.ChildTest = "TestPoolChild"
	}
	if opts.Startup == 0 {
		opts.Startup = time.Minute
	}
	tm := opts.Timing
	name := electiontesting.Election(t)
	ps := newPoolShards(opts.Shards)
	store := newBackend(t) // this side's reads of the store

	var workers []*pool.Pool
	defer func() {
		for _, p := range workers {
			ctx, cancel := context.WithTimeout(context.Background(), 2*tm.RenewDeadline)
			_ = p.Stop(ctx)
			cancel()
		}
	}()
	for i := range opts.Workers - 1 {
		workers = append(workers, ps.startWorker(t, name, fmt.Sprintf("w%d", i), tm, newBackend(t)))
	}

	childID := fmt.Sprintf("w%d-child", opts.Workers-1)
	child := startPoolChild(t, opts, poolChildConfig{
		Addr: opts.Addr, Pool: name, Identity: childID, Shards: opts.Shards, Timing: tm,
	})

	// The child is up once it holds a member slot: the lowest free one, so
	// among the first Workers (a few more read, as the pool's scans do, for
	// a worker that lost its slot and took another meanwhile).
	execed := time.Now()
	for {
		if slotHeld(store, name, opts.Workers+8, childID) {
			break
		}
		child.exitedFatal(t, "before it took a member slot")
		if time.Since(execed) > opts.Startup {
			t.Fatalf("the child %s held no member slot %v after its start", childID, opts.Startup)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ready := time.Now()
	t.Logf("pool kill: the child %s (pid %d) took a member slot %v after its start", childID, child.cmd.Process.Pid, ready.Sub(execed).Round(time.Millisecond))

	// Every worker, the child included, holds its share ±1.
	var lastErr error
	var childHeld map[string]fxelection.Lease
	waitPoolShare(t, "share with the child", func() []int {
		child.exitedFatal(t, "before it was killed")
		c := ownedCounts(workers)
		held, err := heldBy(store, name, ps.names, childID)
		if err != nil {
			lastErr = err
			return append(c, -1)
		}
		childHeld = held
		return append(c, len(held))
	}, opts.Shards, opts.Shards/opts.Workers-1, (opts.Shards+opts.Workers-1)/opts.Workers+1, ready, 5*tm.RetryPeriod+opts.Slack, func() string {
		return fmt.Sprintf("the child last: %d shards, store error %v; workers in this process: %+v", len(childHeld), lastErr, poolStatuses(workers))
	})

	// SIGKILL: the child releases nothing; its leases run out.
	killed := time.Now()
	child.kill()
	t.Logf("pool kill: the child %s: %v", childID, child.err)
	// What the child held when it died: nobody can have taken those shards
	// yet, since their leases had LeaseDuration left at the child's last
	// renewal.
	childHeld, err := heldBy(store, name, ps.names, childID)
	if err != nil {
		t.Fatalf("reading the child's shards after the kill: %v", err)
	}
	if len(childHeld) == 0 {
		t.Fatalf("the store shows the killed child %s holding no shard", childID)
	}
	limit := tm.LeaseDuration + 2*tm.RetryPeriod + opts.Slack
	var failover time.Duration
	for {
		mine := make(map[string]bool, opts.Shards)
		for _, p := range workers {
			for _, s := range p.Owned() {
				mine[s.Name] = true
			}
		}
		var orphans []string
		for s := range childHeld {
			if !mine[s] {
				orphans = append(orphans, s)
			}
		}
		if len(orphans) == 0 {
			failover = time.Since(killed)
			break
		}
		if time.Since(killed) > limit {
			slices.Sort(orphans)
			t.Fatalf("%d of the killed child's %d shards not owned again %v after the kill (LeaseDuration %v + 2 RetryPeriods %v + slack %v): %v; workers: %+v",
				len(orphans), len(childHeld), limit, tm.LeaseDuration, tm.RetryPeriod, opts.Slack, orphans, poolStatuses(workers))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Each of the child's shards was taken after the kill (by a worker of
	// this process: the recorders observe only those), with a term above
	// the child's.
	for s, l := range childHeld {
		var taken *electiontesting.Interval
		for _, iv := range ps.recs[s].Intervals() {
			if !iv.Start.Before(killed) {
				taken = &iv
				break
			}
		}
		switch {
		case taken == nil:
			t.Errorf("shard %s: owned again, yet no worker here started leading it after the kill: %+v", s, ps.recs[s].Intervals())
		case taken.Term <= l.Term:
			t.Errorf("shard %s: taken with term %d, not above the killed child's %d", s, taken.Term, l.Term)
		}
	}
	ps.check(t)
	t.Logf("pool of %d shards over %d workers: a worker (the child, %d shards) killed with SIGKILL, its shards owned again in %v (bound %v: LeaseDuration %v + 2 × RetryPeriod %v + slack %v)",
		opts.Shards, opts.Workers, len(childHeld), failover.Round(time.Millisecond), limit, tm.LeaseDuration, tm.RetryPeriod, opts.Slack)
	return failover
}

// poolChild is CheckPoolKill's child process.
type poolChild struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed once the child is reaped
	err  error         // Wait's, once done
	once sync.Once
}

// startPoolChild execs the test binary to run only opts.ChildTest with c in
// PoolChildEnv. The child is killed and reaped at the test's end.
func startPoolChild(t *testing.T, opts PoolKillOptions, c poolChildConfig) *poolChild {
	t.Helper()
	env, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	// Only the flags given here: none of this run's (-test.run, -test.bench,
	// -test.fuzz, profiles, -test.shuffle) reaches the child. The timeout
	// bounds a child whose parent vanished without closing its stdin.
	cmd := exec.Command(os.Args[0],
		"-test.run=^"+opts.ChildTest+"$", "-test.count=1",
		"-test.timeout="+(10*time.Minute+opts.Startup+opts.Slack).String())
	cmd.Env = append(os.Environ(), PoolChildEnv+"="+string(env))
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // should a grandchild hold the output open
	stdin, err := cmd.StdinPipe()   // reaches its end when this process dies
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the pool child: %v", err)
	}
	pc := &poolChild{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		pc.err = cmd.Wait() // closes stdin
		close(pc.done)
	}()
	t.Cleanup(func() {
		pc.kill()
		_ = stdin.Close()
		if t.Failed() {
			t.Logf("pool child output:\n%s", out.String())
		}
	})
	return pc
}

// kill sends SIGKILL to the child (once) and waits until it is reaped.
func (pc *poolChild) kill() {
	pc.once.Do(func() { _ = pc.cmd.Process.Kill() })
	<-pc.done
}

// exitedFatal fails t if the child has ended on its own (the cleanup logs
// its output).
func (pc *poolChild) exitedFatal(t *testing.T, when string) {
	t.Helper()
	select {
	case <-pc.done:
		t.Fatalf("the pool child exited %s: %v (its output follows)", when, pc.err)
	default:
	}
}

// lockedBuffer is a bytes.Buffer safe for the child's two output streams.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// slotHeld reports whether identity holds one of pool name's first n
// member slots ("<name>#member/<k>", as pool.Config documents).
func slotHeld(b fxelection.Backend, name string, n int, identity string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for k := range n {
		if l, err := b.Get(ctx, poolMember(name, k)); err == nil && l.Holder == identity {
			return true
		}
	}
	return false
}

// heldBy reads every shard of pool name from the store (shard s is the
// election "<name>#shard/<s>", as pool.Config documents), a few at a time,
// and returns the leases identity holds.
func heldBy(b fxelection.Backend, name string, shards []string, identity string) (map[string]fxelection.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases := make([]fxelection.Lease, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, s := range shards {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			leases[i], errs[i] = b.Get(ctx, poolShard(name, s))
			if errors.Is(errs[i], backendkit.ErrNoLease) {
				leases[i], errs[i] = fxelection.Lease{}, nil
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", shards[i], err)
		}
	}
	out := make(map[string]fxelection.Lease)
	for i, l := range leases {
		if l.Holder == identity {
			out[shards[i]] = l
		}
	}
	return out, nil
}

// poolShard is the election of shard of pool: "<pool>#shard/<shard>", as
// pool.Config documents.
func poolShard(pool, shard string) string {
	return pool + string(backendkit.ReservedNameChar) + "shard/" + shard
}

// poolMember is member slot k of pool: "<pool>#member/<k>", as pool.Config
// documents.
func poolMember(pool string, k int) string {
	return pool + string(backendkit.ReservedNameChar) + "member/" + strconv.Itoa(k)
}
