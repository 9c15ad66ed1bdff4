package main

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/metrics"
)

// observability serves /metrics (Prometheus), /healthz (liveness: fails for
// a wedged leader), /readyz (campaigning and the store answers) and
// /leader (JSON: who leads, as this process sees it) on addr ("" for none),
// for every elector in the app: it finds them, as metrics.Module does,
// through the group fxelection.GroupTag.
func observability(addr string) fx.Option {
	return fx.Options(
		fx.Provide(func() (*prometheus.Registry, prometheus.Registerer) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			return reg, reg
		}),
		metrics.Module,
		fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, es []*fxelection.Elector, reg *prometheus.Registry, h metrics.Handlers) {
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			mux.Handle("/healthz", h.Liveness)
			mux.Handle("/readyz", h.Readiness)
			mux.Handle("/leader", leaderHandler(es))
			serveHTTP(lc, addr, getOnly(mux))
		}, fx.ParamTags(``, fxelection.GroupTag, ``, ``))),
	)
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
