package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

func tokenCtx(ctx context.Context, election string, term uint64) context.Context {
	return fence.WithToken(ctx, fence.Token{Election: election, Term: term})
}

func TestGuardedWrites(t *testing.T) {
	ctx := ctxT(t)
	c := newClient(t, newServer(t).Addr())
	g := redisfence.New(c, redisfence.Options{})
	el := election(t)
	key := "app:" + redisfence.HashTag(el) + ":k"

	if err := g.Set(tokenCtx(ctx, el, 5), key, "v5", 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(tokenCtx(ctx, el, 5), key, "v5b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl %v", ttl)
	}
	if n, err := g.HSet(tokenCtx(ctx, el, 6), key+"h", "a", 1, "b", 2); err != nil || n != 2 {
		t.Fatalf("HSet: %d %v", n, err)
	}
	id, err := g.XAdd(tokenCtx(ctx, el, 7), key+"s", "term", 7)
	if err != nil || id == "" {
		t.Fatalf("XAdd: %q %v", id, err)
	}

	err = g.Set(tokenCtx(ctx, el, 6), key, "stale", 0)
	var ste *fence.StaleTermError
	if !errors.As(err, &ste) || !errors.Is(err, fence.ErrStaleTerm) || ste.Highest != 7 || ste.Term != 6 || ste.Election != el {
		t.Fatalf("stale Set: %v (%+v)", err, ste)
	}
	if _, err := g.HSet(tokenCtx(ctx, el, 1), key+"h", "a", 9); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("stale HSet: %v", err)
	}
	if _, err := g.XAdd(tokenCtx(ctx, el, 1), key+"s", "term", 1); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("stale XAdd: %v", err)
	}
	if v := c.Get(ctx, key).Val(); v != "v5b" {
		t.Fatalf("stale write landed: %q", v)
	}
	if v := c.HGet(ctx, key+"h", "a").Val(); v != "1" {
		t.Fatalf("stale HSet landed: %q", v)
	}
	if n := c.XLen(ctx, key+"s").Val(); n != 1 {
		t.Fatalf("stream has %d entries", n)
	}

	// Terms beyond 2^53 (Lua's exact numbers) compare exactly.
	big := uint64(1) << 60
	if err := g.Advance(tokenCtx(ctx, el, big+1)); err != nil {
		t.Fatal(err)
	}
	if err := g.Advance(tokenCtx(ctx, el, big)); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("2^60 after 2^60+1: %v", err)
	}
	if err := g.Advance(tokenCtx(ctx, el, backendkit.MaxTerm)); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx, g.FenceKey(el)).Val(); v != strconv.FormatUint(backendkit.MaxTerm, 10) {
		t.Fatalf("fence key %q", v)
	}

	// Bad tokens never reach Redis.
	if err := g.Set(ctx, key, "x", 0); !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("no token: %v", err)
	}
	for _, term := range []uint64{0, backendkit.MaxTerm + 1} {
		if err := g.Set(tokenCtx(ctx, el, term), key, "x", 0); !errors.Is(err, fence.ErrInvalidToken) {
			t.Fatalf("term %d: %v", term, err)
		}
	}
	if _, err := g.HSet(tokenCtx(ctx, el, 1), key, "odd"); err == nil {
		t.Fatal("HSet with an odd argument count")
	}
}

func TestUserScript(t *testing.T) {
	ctx := ctxT(t)
	c := newClient(t, newServer(t).Addr())
	g := redisfence.New(c, redisfence.Options{KeyPrefix: "myapp:"})
	el := election(t)
	tag := redisfence.HashTag(el)
	// Move an amount between two keys: several keys, one atomic script.
	move := redisfence.NewScript(`
redis.call('DECRBY', KEYS[1], ARGV[1])
return redis.call('INCRBY', KEYS[2], ARGV[1])`)
	from, to := "acct:"+tag+":a", "acct:"+tag+":b"
	v, err := g.Run(tokenCtx(ctx, el, 3), move, []string{from, to}, 10)
	if err != nil || v != int64(10) {
		t.Fatalf("Run: %v %v", v, err)
	}
	if _, err := g.Run(tokenCtx(ctx, el, 2), move, []string{from, to}, 10); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("stale Run: %v", err)
	}
	if a, b := c.Get(ctx, from).Val(), c.Get(ctx, to).Val(); a != "-10" || b != "10" {
		t.Fatalf("a=%s b=%s", a, b)
	}
	if !strings.HasPrefix(g.FenceKey(el), "myapp:"+tag) {
		t.Fatal(g.FenceKey(el))
	}
	// A script error is returned, not hidden.
	bad := redisfence.NewScript(`return redis.call('NOSUCHCOMMAND')`)
	if _, err := g.Run(tokenCtx(ctx, el, 3), bad, nil); err == nil || errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("script error: %v", err)
	}
}

// TestHostileFenceKey: a fence key written by something else is reported,
// never trusted and never overwritten.
func TestHostileFenceKey(t *testing.T) {
	ctx := ctxT(t)
	c := newClient(t, newServer(t).Addr())
	g := redisfence.New(c, redisfence.Options{})
	for i, v := range []string{"abc", "-5", "007", "1.5", "9223372036854775808", "99999999999999999999", "", " 1"} {
		el := fmt.Sprintf("%s-%d", election(t), i)
		c.Set(ctx, g.FenceKey(el), v, 0)
		err := g.Set(tokenCtx(ctx, el, 1), "k"+redisfence.HashTag(el), "x", 0)
		if !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("fence key %q: %v, want ErrInvalidRecord", v, err)
		}
		if got := c.Get(ctx, g.FenceKey(el)).Val(); got != v {
			t.Errorf("fence key %q overwritten with %q", v, got)
		}
	}
	el := election(t)
	c.LPush(ctx, g.FenceKey(el), "x")
	if err := g.Advance(tokenCtx(ctx, el, 1)); err == nil || errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("fence key of another type: %v", err)
	}
}

// TestKeysShareLeaseSlot: the fence key carries the lease backend's hash
// tag, and on a Redis Cluster a guarded write to a key with HashTag works
// while a key in another slot is refused whole.
func TestKeysShareLeaseSlot(t *testing.T) {
	for _, name := range []string{"billing", "a{b}c", "%7B", "ünï"} {
		lease, _ := newLease(t, nil).Keys(name)
		if !strings.Contains(lease, redisfence.HashTag(name)+":") {
			t.Errorf("lease key %q does not carry tag %q", lease, redisfence.HashTag(name))
		}
	}
	ctx := ctxT(t)
	srv := testserver.NewRedis(t, testserver.RedisOptions{Cluster: true})
	admin := newClient(t, srv.Addr())
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "cluster ok", func() bool {
		info, _ := admin.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	})
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	g := redisfence.New(cc, redisfence.Options{})
	el := election(t)
	if err := g.Set(tokenCtx(ctx, el, 1), "app:"+redisfence.HashTag(el)+":x", "v", 0); err != nil {
		t.Fatalf("same slot: %v", err)
	}
	if err := g.Set(tokenCtx(ctx, el, 2), "app:other-slot-key", "v", 0); err == nil {
		t.Fatal("a key in another slot was accepted")
	}
	if cc.Exists(ctx, "app:other-slot-key").Val() != 0 {
		t.Fatal("cross-slot write landed")
	}
}

// TestPartitionedLeaderIsFenced: two electors on one Redis election; the
// leader is cut off from the lease store, the other takes over, and the
// old leader's late write with its old term is refused while the new
// leader's succeed.
func TestPartitionedLeaderIsFenced(t *testing.T) {
	ctx := ctxT(t)
	addr := newServer(t).Addr()
	g := redisfence.New(newClient(t, addr), redisfence.Options{})
	el := election(t)
	stream := "audit:" + redisfence.HashTag(el)

	// Two electors with electiontesting's fault timing, each behind a
	// faultinject.Backend.
	var cs []*electiontesting.Candidate
	for _, id := range []string{"a", "b"} {
		cs = append(cs, electiontesting.StartFaultyCandidate(t, newLease(t, newClient(t, addr)), el, id, nil))
	}
	old, _ := electiontesting.WaitLeader(t, cs, 10*time.Second)
	next := cs[0]
	if next == old {
		next = cs[1]
	}
	var oldLease fxelection.Lease
	ran, err := old.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		oldLease, _ = fxelection.LeaseFromContext(ctx)
		_, err := g.XAdd(ctx, stream, "writer", "old")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("old leader's write: ran=%v %v", ran, err)
	}

	old.Faulty.Partition(true)
	electiontesting.WaitFor(t, electiontesting.Eventually, "the other elector to lead", next.Elector.IsLeader)
	ran, err = next.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		_, err := g.XAdd(ctx, stream, "writer", "new")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("new leader's write: ran=%v %v", ran, err)
	}
	_, err = g.XAdd(fence.WithToken(ctx, fence.TokenOf(oldLease)), stream, "writer", "old-late")
	if !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("old leader's late write: %v, want ErrStaleTerm", err)
	}
	ran, err = next.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		_, err := g.XAdd(ctx, stream, "writer", "new")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("new leader's second write: ran=%v %v", ran, err)
	}
	var writers []string
	for _, m := range newClient(t, addr).XRange(ctx, stream, "-", "+").Val() {
		writers = append(writers, fmt.Sprint(m.Values["writer"]))
	}
	if fmt.Sprint(writers) != "[old new new]" {
		t.Fatalf("stream %v", writers)
	}
}

// TestConcurrentWritersNeverCommitStale: over many rounds, writers with the
// current term and with older terms race on separate connections; the
// stream of accepted writes never goes back in term.
func TestConcurrentWritersNeverCommitStale(t *testing.T) {
	ctx := ctxT(t)
	addr := newServer(t).Addr()
	const writers, rounds = 6, 60
	el := election(t)
	stream := "audit:" + redisfence.HashTag(el)
	guards := make([]*redisfence.Guard, writers)
	for i := range guards {
		guards[i] = redisfence.New(newClient(t, addr), redisfence.Options{})
	}
	var accepted, refused atomic.Int64
	for r := 1; r <= rounds; r++ {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				term := uint64(r + 3 - w%4)
				for range 3 {
					_, err := guards[w].XAdd(tokenCtx(ctx, el, term), stream, "term", term)
					switch {
					case err == nil:
						accepted.Add(1)
					case errors.Is(err, fence.ErrStaleTerm):
						refused.Add(1)
					default:
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	entries := newClient(t, addr).XRange(ctx, stream, "-", "+").Val()
	stale := 0
	var prev uint64
	for _, m := range entries {
		term, _ := strconv.ParseUint(fmt.Sprint(m.Values["term"]), 10, 64)
		if term < prev {
			stale++
		}
		prev = max(prev, term)
	}
	t.Logf("%d writes committed, %d refused as stale, %d stale commits", accepted.Load(), refused.Load(), stale)
	if stale != 0 {
		t.Fatalf("%d stale writes committed", stale)
	}
	if accepted.Load() == 0 || refused.Load() == 0 || int(accepted.Load()) != len(entries) {
		t.Fatalf("accepted %d (entries %d), refused %d", accepted.Load(), len(entries), refused.Load())
	}
}

// BenchmarkWrite measures the guard's cost per write: SET and XADD,
// unguarded and guarded, in the same run. server-µs/op is the time Redis
// itself reports for the top-level command (INFO commandstats: SET or
// XADD, or EVALSHA with everything the guard script does); "paired"
// alternates unguarded and guarded op by op, so both see the same load.
func BenchmarkWrite(b *testing.B) {
	srv := testserver.NewRedis(b, testserver.RedisOptions{})
	ctx := context.Background()
	c := newClient(b, srv.Addr())
	g := redisfence.New(c, redisfence.Options{})
	el := election(b)
	gctx := tokenCtx(ctx, el, 1)
	key := "bench:" + redisfence.HashTag(el) + ":k"
	stream := "bench:" + redisfence.HashTag(el) + ":s"
	set := func() error { return c.Set(ctx, key, "value", 0).Err() }
	gset := func() error { return g.Set(gctx, key, "value", 0) }
	xadd := func() error { return c.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"f", "v"}}).Err() }
	gxadd := func() error { _, err := g.XAdd(gctx, stream, "f", "v"); return err }
	for _, bm := range []struct {
		name string
		op   func() error
		cmd  string
	}{
		{"set/unguarded", set, "set"}, {"set/guarded", gset, "evalsha"},
		{"xadd/unguarded", xadd, "xadd"}, {"xadd/guarded", gxadd, "evalsha"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			if err := bm.op(); err != nil { // loads the script
				b.Fatal(err)
			}
			c.ConfigResetStat(ctx)
			for b.Loop() {
				if err := bm.op(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(serverMicros(b, c, bm.cmd), "server-µs/op")
		})
	}
	for _, p := range []struct {
		name               string
		unguarded, guarded func() error
	}{{"set/paired", set, gset}, {"xadd/paired", xadd, gxadd}} {
		b.Run(p.name, func(b *testing.B) {
			var tu, tg time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				if err := p.unguarded(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := p.guarded(); err != nil {
					b.Fatal(err)
				}
				tu, tg, n = tu+t1.Sub(t0), tg+time.Since(t1), n+1
			}
			b.ReportMetric(float64(tu.Nanoseconds())/float64(n), "unguarded-ns/op")
			b.ReportMetric(float64(tg.Nanoseconds())/float64(n), "guarded-ns/op")
			b.ReportMetric(float64(tg)/float64(tu), "ratio")
		})
	}
}

// serverMicros returns usec_per_call of cmd from INFO commandstats.
func serverMicros(b *testing.B, c *redis.Client, cmd string) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
	}
	return 0
}
