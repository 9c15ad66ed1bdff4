// Command pool spreads 12 shards over workers: one worker takes them all,
// two more join and each ends with 4, moved by hand-over so that no shard
// is left without an owner. The workers share an in-memory backend here;
// in production each is a process on the same store (Redis, Postgres, …).
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	backend := memory.New()
	shards := make([]string, 12)
	for i := range shards {
		shards[i] = fmt.Sprintf("partition-%02d", i)
	}
	var workers []*pool.Pool
	for _, id := range []string{"w1", "w2", "w3"} {
		p, err := pool.New(pool.Config{
			Name: "orders", Shards: shards, Identity: id,
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   500 * time.Millisecond,
			}, OnAcquired: func(ctx context.Context, shard string) {
				lease, _ := fxelection.LeaseFromContext(ctx) // fence the shard's writes with lease.Term
				_ = lease
				<-ctx.Done() // consume the shard until it moves or the worker stops
			},
		}, backend)
		if err != nil {
			return err
		}
		if err := p.Start(ctx); err != nil {
			return err
		}
		defer p.Stop(ctx)
		workers = append(workers, p)
		if id == "w1" {
			for len(p.Owned()) < len(shards) { // alone: it takes every shard
				time.Sleep(10 * time.Millisecond)
			}
			fmt.Fprintf(out, "w1 alone owns %d shards\n", len(p.Owned()))
		}
	}
	for !spread(workers, 4) {
		time.Sleep(10 * time.Millisecond)
	}
	for i, p := range workers {
		st := p.Status() // Members, Slot, Owned, Target, Moves
		fmt.Fprintf(out, "w%d owns %d (target %d, %d workers)\n", i+1, st.Owned, st.Target, st.Members)
	}
	return nil
}

// spread reports whether every worker owns n shards, and knows it.
func spread(workers []*pool.Pool, n int) bool {
	for _, p := range workers {
		if st := p.Status(); len(p.Owned()) != n || st.Target != n || st.Members != len(workers) {
			return false
		}
	}
	return true
}
