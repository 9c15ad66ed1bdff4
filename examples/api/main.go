// Command api walks through the Elector's API on the in-memory backend,
// one call at a time, and exits: candidate a leads, works under its lease
// and resigns; follower b, which saw a lead, takes over. The README links
// it as the tour of the API.
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
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	backend := memory.New() // or redislease.New(client, …), pglease.New(…)
	cfg := fxelection.Config{Name: "api-tour", Identity: "a",
		Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}
	o := fxelection.ObserverFunc(func(ev fxelection.Event) { // fast, never blocks: it runs on the elector's goroutines
		if ev.Kind == fxelection.EventStartedLeading || ev.Kind == fxelection.EventStoppedLeading {
			fmt.Fprintf(out, "event: %s %s (term %d)\n", ev.Identity, ev.Kind, ev.Lease.Term)
		}
	})

	e, err := fxelection.New(cfg, backend) // validates cfg; no I/O
	if err != nil {
		return err
	}
	remove := e.AddObserver(o) // metrics plug in here (no Prometheus in the core)
	defer remove()
	err = e.Start(ctx) // idempotent; campaigns in the background
	if err != nil {
		return err
	}
	leading, err := e.TryAcquire(ctx) // one attempt now, not at the next retry
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a leads after TryAcquire: %v\n", leading)
	leading = e.IsLeader() // holds the lease and last renewal < RenewDeadline ago
	lease, ok := e.Lease() // (Lease{Holder, Metadata, Term, …}, true) while leader
	fmt.Fprintf(out, "a: IsLeader %v, Lease %s term %d (%v)\n", leading, lease.Holder, lease.Term, ok)

	work := func(ctx context.Context) error {
		held, _ := fxelection.LeaseFromContext(ctx) // inside leader work: held.Term is the fencing token
		fmt.Fprintf(out, "a works under term %d\n", held.Term)
		return nil
	}
	ran, err := e.RunIfLeader(ctx, work) // work's ctx is cancelled on loss and carries the lease
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "work ran: %v\n", ran)

	follower, err := fxelection.New(fxelection.Config{Name: cfg.Name, Identity: "b",
		Timing: fxelection.Timing{LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod}}, backend)
	if err != nil {
		return err
	}
	if err := follower.Start(ctx); err != nil {
		return err
	}
	if _, err := follower.TryAcquire(ctx); err != nil { // a holds the lease: b learns who leads
		return err
	}
	leader, known := follower.Leader() // the current leader as last seen — on followers too
	fmt.Fprintf(out, "b sees leader %s (term %d, known %v)\n", leader.Holder, leader.Term, known)

	err = e.Resign(ctx) // give leadership away now
	if err != nil {
		return err
	}
	if leading, err = follower.TryAcquire(ctx); err != nil { // or wait: b is woken by the release
		return err
	}
	fmt.Fprintf(out, "b leads after a resigned: %v\n", leading)
	status := e.Status() // snapshot for health checks
	fmt.Fprintf(out, "a: running %v, leading %v\n", status.Running, status.Leading)
	err = e.Stop(ctx) // idempotent; drains leader work, then releases
	if err != nil {
		return err
	}
	return follower.Stop(ctx)
}
