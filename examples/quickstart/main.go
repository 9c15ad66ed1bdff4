// Command quickstart elects a leader among three candidates in one process
// on the in-memory backend, hands leadership over once, and exits.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func main() {
	ctx := context.Background()
	backend := memory.New() // or redislease.New(client, …), pglease.New(…)

	var electors []*fxelection.Elector
	for _, id := range []string{"a", "b", "c"} {
		e, err := fxelection.New(fxelection.Config{
			Name:     "quickstart",
			Identity: id,
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   500 * time.Millisecond,
			},
			Callbacks: fxelection.Callbacks{
				OnStartedLeading: func(ctx context.Context) {
					lease, _ := fxelection.LeaseFromContext(ctx)
					fmt.Printf("%s leads (fencing term %d)\n", id, lease.Term)
				},
				OnStoppedLeading: func(lease fxelection.Lease, why fxelection.StopReason) {
					fmt.Printf("%s stopped leading: %s\n", id, why)
				},
			},
		}, backend)
		if err != nil {
			panic(err)
		}
		if err := e.Start(ctx); err != nil {
			panic(err)
		}
		electors = append(electors, e)
	}

	time.Sleep(time.Second)
	for _, e := range electors {
		if e.IsLeader() {
			if err := e.Stop(ctx); err != nil { // drains leader work, releases: another leads at once
				panic(err)
			}
		}
	}
	time.Sleep(time.Second)
	for _, e := range electors {
		if l, ok := e.Leader(); ok {
			fmt.Printf("%s sees leader %s (term %d)\n", e.Status().Identity, l.Holder, l.Term)
		}
		if err := e.Stop(ctx); err != nil { // a second Stop does nothing
			panic(err)
		}
	}
}
