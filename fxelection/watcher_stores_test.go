package fxelection_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

// Real-store watcher tests: the watcher sees every change of leader
// (graceful hand-over, stop, cut) within its documented bound.
const (
	storePoll  = 500 * time.Millisecond
	storeLease = 2 * time.Second
	storeRenew = 1300 * time.Millisecond
	storeRetry = 300 * time.Millisecond
	// storeBound is JitterFactor×PollInterval plus a generous allowance for
	// one Get and a loaded machine.
	storeBound = time.Duration(fxelection.JitterFactor*float64(storePoll)) + time.Second
)

func TestWatcherRedis(t *testing.T) {
	addr := testserver.NewRedis(t, testserver.RedisOptions{}).Addr()
	newBackend := func(t *testing.T) fxelection.Backend {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		return redislease.New(c, redislease.Options{})
	}
	watchScenario(t, newBackend)
}

func TestWatcherPostgres(t *testing.T) {
	dsn := testserver.NewPostgres(t, testserver.PostgresOptions{}).DSN()
	newBackend := func(t *testing.T) fxelection.Backend {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = 3
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		b, err := pglease.New(pool, pglease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	watchScenario(t, newBackend)
}

type storeNode struct {
	e *fxelection.Elector
	f *electiontest.Faulty
}

func watchScenario(t *testing.T, newBackend func(t *testing.T) fxelection.Backend) {
	ctx := context.Background()
	election := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	changes := &changeLog{}
	w, err := fxelection.NewWatcher(fxelection.WatcherConfig{Name: election, PollInterval: storePoll, OnChange: changes.add}, newBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(ctx); err != nil {
			t.Error(err)
		}
	})

	var nodes []*storeNode
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		f := electiontest.NewFaulty(newBackend(t))
		e, err := fxelection.New(fxelection.Config{
			Name: election, Identity: id, Metadata: map[string]string{"addr": id + ":8080"},
			LeaseDuration: storeLease, RenewDeadline: storeRenew, RetryPeriod: storeRetry,
		}, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop(ctx) })
		nodes = append(nodes, &storeNode{e, f})
	}

	// nextLeader waits for a node other than not to lead, then for the
	// watcher to report it, and checks the delay against the bound.
	var leaders []fxelection.Lease
	nextLeader := func(step string, not ...*storeNode) *storeNode {
		t.Helper()
		var l *storeNode
		var lease fxelection.Lease
		deadline := time.Now().Add(5 * storeLease)
		for l == nil {
			for _, n := range nodes {
				if got, ok := n.e.Lease(); ok && !slices.Contains(not, n) {
					l, lease = n, got
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no new leader", step)
			}
			time.Sleep(2 * time.Millisecond)
		}
		led := time.Now()
		for {
			info, _ := w.Leader()
			if info.HasLeader && info.Leader.Holder == lease.Holder && info.Leader.Term == lease.Term {
				if info.Leader.Metadata["addr"] != lease.Holder+":8080" {
					t.Fatalf("%s: metadata %v", step, info.Leader.Metadata)
				}
				t.Logf("%s: %s (term %d) seen %v after it led", step, lease.Holder, lease.Term, time.Since(led).Round(time.Millisecond))
				break
			}
			if time.Since(led) > storeBound {
				t.Fatalf("%s: watcher did not report %s (term %d) within %v; it reports %+v", step, lease.Holder, lease.Term, storeBound, info)
			}
			time.Sleep(2 * time.Millisecond)
		}
		leaders = append(leaders, lease)
		return l
	}

	l1 := nextLeader("first leader")
	if err := l1.e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l2 := nextLeader("graceful hand-over (Resign)", l1)
	if err := l2.e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	l3 := nextLeader("leader stopped", l2)
	l3.f.Partition(true)
	nextLeader("leader cut off", l2, l3)

	// Every leader appears in the change log, in order.
	changes.mu.Lock()
	var seen []fxelection.Lease
	for _, c := range changes.all {
		if c.HasLeader {
			seen = append(seen, c.Leader)
		}
	}
	changes.mu.Unlock()
	i := 0
	for _, s := range seen {
		if i < len(leaders) && s.Holder == leaders[i].Holder && s.Term == leaders[i].Term {
			i++
		}
	}
	if i != len(leaders) {
		t.Fatalf("OnChange saw %d of %d leaders in order: %q", i, len(leaders), changes.holders())
	}
}
