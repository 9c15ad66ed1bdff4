package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/metrics"
)

// observability serves /metrics (Prometheus), /healthz (liveness: fails for
// a wedged leader), /readyz (campaigning and the store answers) and
// /leader (JSON: who leads, as this process sees it) on --http.
func observability() fx.Option {
	return fx.Options(
		fx.Provide(func() (*prometheus.Registry, prometheus.Registerer) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			return reg, reg
		}),
		metrics.Module,
		fx.Invoke(func(lc fx.Lifecycle, e *fxelection.Elector, o options, reg *prometheus.Registry, h metrics.Handlers) {
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			mux.Handle("/healthz", h.Liveness)
			mux.Handle("/readyz", h.Readiness)
			mux.Handle("/leader", leaderHandler(e))
			serveHTTP(lc, o.httpAddr, mux)
		}),
	)
}
