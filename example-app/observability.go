package main

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/metrics"
)

// observability provides the metrics (*metrics.Metrics, on a registry of
// the app's own, which the runtime's Attach gives every elector) and
// serves /metrics (Prometheus), /healthz (liveness: fails for a wedged
// leader), /readyz (campaigning and the store answers) and /leader (JSON:
// who leads, as this process sees it) on addr ("" for none). The health
// reports and /leader cover the runtime's electors at the time of each
// request, in the running document's order: an election a load adds
// appears, one it removes disappears. The graph's metrics.HealthOptions
// configures the health checks if it has one.
func observability(addr string) fx.Option {
	return fx.Options(
		fx.Provide(func() (*prometheus.Registry, prometheus.Registerer) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			return reg, reg
		}),
		fx.Provide(func(reg prometheus.Registerer) (*metrics.Metrics, error) { return metrics.New(reg) }),
		fx.Invoke(func(p endpointParams) {
			current := p.Runtime.Electors
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{}))
			mux.Handle("/healthz", overCurrent(current, p.Health.Liveness))
			mux.Handle("/readyz", overCurrent(current, p.Health.Readiness))
			mux.Handle("/leader", leaderHandler(current))
			serveHTTP(p.Lifecycle, "--http", addr, getOnly(mux), serverTimeouts)
		}),
	)
}

// overCurrent answers each request with the handler handler makes over the
// electors current returns at that moment.
func overCurrent(current func() []*fxelection.Elector, handler func(...*fxelection.Elector) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler(current()...).ServeHTTP(w, r)
	})
}

// endpointParams are what observability's endpoints need.
type endpointParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Runtime   *config.Runtime
	Registry  *prometheus.Registry
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
