package main

import (
	"net/http"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// observability serves /leader (and, once wired, /metrics, /healthz, /readyz).
func observability() fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle, e *fxelection.Elector, o options) {
		mux := http.NewServeMux()
		mux.Handle("/leader", leaderHandler(e))
		serveHTTP(lc, o.httpAddr, mux)
	})
}
