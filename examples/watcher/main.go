// Command watcher follows an election's leader without campaigning, as a
// router sending requests to the leader's advertised address would: it
// watches candidate a lead, then a hand-over to b, and exits. Both share an
// in-memory backend here; in production the watcher reads the candidates'
// store (Redis, Postgres, …) from another process.
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
	"github.com/fxelection/fxelection/fxelection/watch"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	backend := memory.New()      // or the backend the candidates use
	route := func(addr string) { // "" while nobody leads
		fmt.Fprintf(out, "routing requests to %q\n", addr)
	}

	w, err := watch.New(watch.Config{
		Name:         "billing",
		PollInterval: time.Second,                                                   // default 2s
		OnChange:     func(i watch.LeaderInfo) { route(i.Leader.Metadata["addr"]) }, // in order, one goroutine
	}, backend)
	if err != nil {
		return err
	}
	err = w.Start(ctx) // reads at once, then every PollInterval until Stop
	if err != nil {
		return err
	}
	defer func() {
		if err := w.Stop(ctx); err != nil {
			log.Print(err)
		}
	}()
	ch, cancel := w.Subscribe() // latest-state channel: a slow reader skips to the newest
	defer cancel()

	a, err := candidate(ctx, backend, "a", "10.0.0.1:8080")
	if err != nil {
		return err
	}
	info := leaderIs(ch, "a")
	fmt.Fprintf(out, "leader %s at %s, term %d\n", info.Leader.Holder, info.Leader.Metadata["addr"], info.Leader.Term)
	b, err := candidate(ctx, backend, "b", "10.0.0.2:8080")
	if err != nil {
		return err
	}
	if err := a.Stop(ctx); err != nil { // releases: b leads at once, and the watcher sees it within milliseconds
		return err
	}
	leaderIs(ch, "b")
	info, known := w.Leader() // LeaderInfo{Leader, HasLeader, ObservedAt}; known once the store answered
	lastErr := w.LastError()  // the last read's store failure, nil once it answers again
	fmt.Fprintf(out, "leader %s at %s, term %d (known %v, store error %v)\n",
		info.Leader.Holder, info.Leader.Metadata["addr"], info.Leader.Term, known, lastErr)
	return b.Stop(ctx)
}

// candidate starts a candidate that advertises addr to followers.
func candidate(ctx context.Context, backend fxelection.Backend, id, addr string) (*fxelection.Elector, error) {
	e, err := fxelection.New(fxelection.Config{Name: "billing", Identity: id, Metadata: map[string]string{"addr": addr},
		Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}, backend)
	if err != nil {
		return nil, err
	}
	return e, e.Start(ctx)
}

// leaderIs reads ch until it reports holder as the leader.
func leaderIs(ch <-chan watch.LeaderInfo, holder string) watch.LeaderInfo {
	for info := range ch {
		if info.HasLeader && info.Leader.Holder == holder {
			return info
		}
	}
	return watch.LeaderInfo{}
}
