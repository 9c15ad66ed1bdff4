// Command gocron runs a gocron v2 job only on the leader: two fx apps (two
// "nodes") share one in-memory election; the job runs on whichever leads,
// and moves when the leader's app stops (scheduler first, then the elector,
// which releases the lease at once).
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
)

func node(id string, backend fxelection.Backend) *fx.App {
	return fx.New(
		fx.NopLogger,
		fx.Supply(fx.Annotate(backend, fx.As(new(fxelection.Backend)))), // or redislease.Module, pglease.Module
		fx.Supply(fxelection.Config{Name: "reports", Identity: id,
			Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}),
		fxelection.Module,
		fxgocron.Module, // a gocron.Scheduler that asks the elector before every run
		fx.Invoke(func(s gocron.Scheduler, e *fxelection.Elector) error {
			_, err := s.NewJob(gocron.DurationJob(200*time.Millisecond),
				fxgocron.NewTask(e, func(ctx context.Context) error { // ctx ends with leadership
					lease, _ := fxelection.LeaseFromContext(ctx)
					fmt.Printf("%s runs the report (term %d)\n", id, lease.Term)
					return nil
				}),
				gocron.WithSingletonMode(gocron.LimitModeReschedule))
			return err
		}),
	)
}

func main() {
	ctx := context.Background()
	backend := memory.New() // shared, as a Redis would be
	a, b := node("a", backend), node("b", backend)
	if err := a.Start(ctx); err != nil {
		panic(err)
	}
	time.Sleep(100 * time.Millisecond) // let a lead first
	if err := b.Start(ctx); err != nil {
		panic(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := a.Stop(ctx); err != nil { // scheduler, then elector: b leads within milliseconds
		panic(err)
	}
	fmt.Println("a stopped")
	time.Sleep(500 * time.Millisecond)
	if err := b.Stop(ctx); err != nil {
		panic(err)
	}
}
