// Command withfx runs one election in an fx app on the in-memory backend:
// while it leads, it writes a report every second, fenced with its term.
// Ctrl-C stops the app, which stops the reports, then releases the lease.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		memory.Module, // the Backend: or redislease.Module, pglease.Module (below)
		fx.Supply(fxelection.Config{Name: "nightly-report"}),
		fxelection.Module, // provides *fxelection.Elector, starts/stops it with the app
		fx.Invoke(func(lc fx.Lifecycle, e *fxelection.Elector) { // inject it anywhere
			reportWhileLeading(lc, e, out)
		}),
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancel()
	return app.Stop(stopCtx)
}

// reportWhileLeading writes a report every second while e leads, from the
// app's start to its stop (which comes before the elector's: fx stops in
// reverse order).
func reportWhileLeading(lc fx.Lifecycle, e *fxelection.Elector, out io.Writer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				tick := time.NewTicker(time.Second)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					_, err := e.RunIfLeader(ctx, func(ctx context.Context) error {
						lease, _ := fxelection.LeaseFromContext(ctx)
						return writeReport(ctx, out, lease.Term) // fence writes with the term
					})
					if err != nil && ctx.Err() == nil {
						fmt.Fprintln(out, "report failed:", err)
					}
				}
			}()
			return nil
		},
		OnStop: func(stopCtx context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-stopCtx.Done():
				return stopCtx.Err()
			}
		},
	})
}

// writeReport stands for the leader's work; a real one passes term to the
// store it writes to, which refuses lower terms (see Fencing your writes).
func writeReport(ctx context.Context, out io.Writer, term uint64) error {
	_, err := fmt.Fprintf(out, "report written with fencing term %d\n", term)
	return err
}
