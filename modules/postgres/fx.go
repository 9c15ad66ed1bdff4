package pglease

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides the graph's fxelection.Backend (and the *Backend itself)
// from the application's *pgxpool.Pool and optional Options (fx.Supply
// them to change the table, schema or channel). The application owns the
// pool; the module never closes it. Construction does no I/O: the table is
// created on first use, so the app starts even while the database is down
// (the elector reports errors and retries). An OnStop hook stops the push
// listener after the electors have stopped.
//
//	fx.New(
//		fx.Provide(newPool), // your func(...) (*pgxpool.Pool, error)
//		pglease.Module,
//		fxelection.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//	)
var Module = fx.Module("fxelection.postgres",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Pool      *pgxpool.Pool
	Options   Options `optional:"true"`
}

// Result is what NewFromParams provides.
type Result struct {
	fx.Out

	Backend  fxelection.Backend
	Postgres *Backend
}

// NewFromParams builds a Backend on the app's pool and stops its listener
// on app stop.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Pool, p.Options)
	if err != nil {
		return Result{}, err
	}
	p.Lifecycle.Append(fx.StopHook(b.Close))
	return Result{Backend: b, Postgres: b}, nil
}
