// Command postgres runs one election on PostgreSQL in an fx app and logs
// every leadership it gains or loses, until Ctrl-C. The lease table is
// created at start (in PG_SCHEMA if set: that schema must exist), so a
// missing schema or privilege stops the start with an error instead of
// showing up later as election errors.
//
//	DATABASE_URL=postgres://app@localhost:5432/app go run ./examples/postgres
package main

import (
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// An empty DATABASE_URL means libpq's defaults (PGHOST, PGUSER, …).
	if err := run(ctx, os.Getenv("DATABASE_URL"), os.Getenv("PG_SCHEMA"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, dsn, schema string, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(out, nil))), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) (*pgxpool.Pool, error) { // your pool: you own and close it
			pool, err := pgxpool.New(context.Background(), dsn)
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(pool.Close))
			return pool, nil
		}),
		fx.Supply(pglease.Options{Schema: schema}), // optional ("": the search_path); the schema must exist
		pglease.Module, // provides fxelection.Backend (+ *pglease.Backend)
		fx.Invoke(func(lc fx.Lifecycle, b *pglease.Backend) {
			lc.Append(fx.StartHook(b.CreateTable)) // optional: fail the start, not each election, on a missing schema or privilege
		}),
		fx.Supply(fxelection.Config{Name: "billing"}),
		fxelection.Module,
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancel()
	return app.Stop(stopCtx)
}
