package main

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/metrics"
)

// observability serves /metrics (Prometheus), /healthz (liveness: fails for
// a wedged leader), /readyz (campaigning and the store answers) and
// /leader (JSON: who leads, as this process sees it) on addr ("" for none),
// for every elector in the app. metrics.Module finds them through the group
// fxelection.GroupTag; the health reports and /leader list them in the
// document's order (electorList), with the graph's metrics.HealthOptions
// if it has one.
func observability(addr string) fx.Option {
	return fx.Options(
		fx.Provide(func() (*prometheus.Registry, prometheus.Registerer) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			return reg, reg
		}),
		metrics.Module,
		fx.Invoke(func(p endpointParams) {
			h := p.Health.NewHandlers(p.Electors...)
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{}))
			mux.Handle("/healthz", h.Liveness)
			mux.Handle("/readyz", h.Readiness)
			mux.Handle("/leader", leaderHandler(p.Electors))
			serveHTTP(p.Lifecycle, addr, getOnly(mux))
		}),
	)
}

// endpointParams are what observability's endpoints need.
type endpointParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Electors  electorList
	Registry  *prometheus.Registry
	Metrics   *metrics.Metrics      // attached to every elector before the endpoints serve
	Health    metrics.HealthOptions `optional:"true"`
}

// getOnly answers 405 Method Not Allowed, with an Allow header, to every
// method but GET and HEAD: the endpoints only report.
func getOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// httpTimeouts bound what one client can hold of the server.
type httpTimeouts struct {
	readHeader, read, write, idle time.Duration
}

// serverTimeouts are the example's: a request is a few hundred bytes, and
// /metrics renders in well under a second.
var serverTimeouts = httpTimeouts{readHeader: 5 * time.Second, read: 10 * time.Second, write: 30 * time.Second, idle: 60 * time.Second}

// newHTTPServer is the example's server for h, with every timeout set so a
// slow or idle client cannot hold a connection forever.
func newHTTPServer(h http.Handler, t httpTimeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
	}
}
