// Command fencing shows a fencing guard refusing a deposed leader's write:
// leader a writes under its term, is cut off from the lease store (as a
// long GC pause or a network partition would), b takes over and writes,
// then a resumes and tries to write with its old term.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/fence"
	redislease "github.com/fxelection/fxelection/modules/redis"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

func main() {
	ctx := context.Background()
	addr := os.Getenv("REDIS_ADDR") // e.g. 127.0.0.1:6379
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	guard := redisfence.New(client, redisfence.Options{})
	election := fmt.Sprintf("fencing-demo-%d", time.Now().UnixNano())
	key := "demo:" + redisfence.HashTag(election) + ":owner" // same slot as the fence key

	start := func(id string, b fxelection.Backend) *fxelection.Elector {
		e, err := fxelection.New(fxelection.Config{Name: election, Identity: id,
			Timing: fxelection.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: 1300 * time.Millisecond, RetryPeriod: 300 * time.Millisecond}}, b)
		if err != nil {
			panic(err)
		}
		if err := e.Start(ctx); err != nil {
			panic(err)
		}
		return e
	}
	stop := func(e *fxelection.Elector) {
		if err := e.Stop(ctx); err != nil {
			fmt.Printf("stop %s: %v\n", e.Status().Identity, err)
		}
	}
	waitLeading := func(e *fxelection.Elector) {
		for !e.IsLeader() {
			time.Sleep(10 * time.Millisecond)
		}
	}

	backend := func() *redislease.Backend {
		b, err := redislease.New(client, redislease.Options{})
		if err != nil {
			panic(err)
		}
		return b
	}

	cut := faultinject.New(backend())
	a := start("a", cut)
	defer stop(a)
	waitLeading(a)

	var paused context.Context // what a's paused code still holds
	if _, err := a.RunIfLeader(ctx, func(ctx context.Context) error {
		tok, _ := fence.FromContext(ctx)
		paused = fence.WithToken(context.Background(), tok)
		fmt.Printf("a writes with term %d: %v\n", tok.Term, guard.Set(ctx, key, "a", 0))
		return nil
	}); err != nil {
		panic(err)
	}

	cut.Partition(true) // a is cut off: its lease expires, b takes over
	b := start("b", backend())
	defer stop(b)
	waitLeading(b)
	if _, err := b.RunIfLeader(ctx, func(ctx context.Context) error {
		lease, _ := fxelection.LeaseFromContext(ctx)
		fmt.Printf("b writes with term %d: %v\n", lease.Term, guard.Set(ctx, key, "b", 0))
		return nil
	}); err != nil {
		panic(err)
	}

	err := guard.Set(paused, key, "a (late)", 0) // a resumes, unaware
	fmt.Printf("a's late write refused: %v\n", errors.Is(err, fence.ErrStaleTerm))
	fmt.Printf("owner: %s\n", client.Get(ctx, key).Val())
}
