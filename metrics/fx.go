package metrics

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module registers the fxelection metrics on the graph's
// prometheus.Registerer (prometheus.DefaultRegisterer when the graph has
// none), attaches them to every elector in the fxelection value group
// (fxelection.GroupTag) and detaches them on stop. It provides *Metrics and
// Handlers (health handlers over all those electors, configured by an
// optional HealthOptions in the graph). Its stop hook never blocks.
//
//	fx.New(
//		memory.Module,
//		fx.Supply(fxelection.Config{Name: "jobs"}),
//		fxelection.Module,
//		metrics.Module,
//		fx.Provide(http.NewServeMux), // and an http.Server on it: see examples/redis
//		fx.Invoke(func(mux *http.ServeMux, h metrics.Handlers) {
//			mux.Handle("/livez", h.Liveness)
//			mux.Handle("/readyz", h.Readiness)
//		}),
//	)
var Module = fx.Module("fxelection.metrics",
	fx.Provide(NewFromParams),
	fx.Invoke(func(*Metrics) {}),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle  fx.Lifecycle
	Registerer prometheus.Registerer `optional:"true"`
	Electors   []*fxelection.Elector `group:"fxelection.electors"`
	Health     HealthOptions         `optional:"true"`
}

// Result is what NewFromParams provides.
type Result struct {
	fx.Out

	Metrics  *Metrics
	Handlers Handlers
}

// Handlers are the health handlers over every elector in an fx app; see
// HealthOptions for what each checks.
type Handlers struct {
	// Liveness fails only for a wedged leader (HealthOptions.Liveness).
	Liveness http.Handler
	// Readiness passes while every elector campaigns, passes its health
	// check and its store answers (HealthOptions.Readiness).
	Readiness http.Handler
	// LeaderOnly passes only while every elector leads
	// (HealthOptions.LeaderOnly).
	LeaderOnly http.Handler
}

// NewHandlers returns the three health handlers over electors.
func (o HealthOptions) NewHandlers(electors ...*fxelection.Elector) Handlers {
	return Handlers{
		Liveness:   o.Liveness(electors...),
		Readiness:  o.Readiness(electors...),
		LeaderOnly: o.LeaderOnly(electors...),
	}
}

// NewFromParams builds the Metrics, attaches every grouped elector at once
// (before their start hooks run, so no event is missed) and detaches them
// in an OnStop hook, which deletes their series.
func NewFromParams(p Params) (Result, error) {
	m, err := New(p.Registerer)
	if err != nil {
		return Result{}, err
	}
	detach := make([]func(), 0, len(p.Electors))
	for _, e := range p.Electors {
		detach = append(detach, m.Attach(e))
	}
	p.Lifecycle.Append(fx.Hook{OnStop: func(context.Context) error {
		for _, d := range detach {
			d()
		}
		return nil
	}})
	return Result{Metrics: m, Handlers: p.Health.NewHandlers(p.Electors...)}, nil
}
