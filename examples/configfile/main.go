// Command configfile runs every election a configuration document
// describes (examples/configs/elections.json, or the file named by its
// argument) until Ctrl-C. It logs each election's start and every
// leadership gained or lost.
//
//	REDIS_ADDR=127.0.0.1:6379 DATABASE_URL=postgres://app@localhost:5432/app go run ./examples/configfile
package main

import (
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	_ "github.com/fxelection/fxelection/modules/postgres" // registers fxelection.backends.postgres
	_ "github.com/fxelection/fxelection/modules/redis"    // registers fxelection.backends.redis
)

func main() {
	path := "examples/configs/elections.json"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, path, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// electors are every elector a document provides, from the group
// fxelection.GroupTag; each is also provided under its election's fx name
// tag (`name:"billing"`) for code that needs one.
type electors struct {
	fx.In
	All []*fxelection.Elector `group:"fxelection.electors"`
}

// run runs the document at path until ctx is done.
func run(ctx context.Context, path string, out io.Writer) error {
	opt, err := config.Loader{}.LoadFile(path) // or config.Load(raw); .yaml/.yml files are YAML
	if err != nil {
		return err // every problem, each with its JSON path; nothing was dialled
	}
	logger := slog.New(slog.NewTextHandler(out, nil))
	app := fx.New(
		fx.NopLogger,
		opt,
		fx.Supply(logger), // the electors log each leadership gained or lost
		fx.Invoke(func(lc fx.Lifecycle, es electors) {
			lc.Append(fx.StartHook(func() { // after the electors' own start hooks
				for _, e := range es.All {
					s := e.Status()
					logger.Info("election started", "election", s.Election, "identity", s.Identity, "backend", s.Backend)
				}
			}))
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
