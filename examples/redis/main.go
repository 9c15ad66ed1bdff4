// Command redis runs one election on Redis in an fx app, with Prometheus
// metrics and health probes: it serves /metrics, /healthz and /readyz and
// logs every leadership it gains or loses, until Ctrl-C. Start it several
// times (each with its own HTTP_ADDR) to watch them elect one leader:
//
//	REDIS_ADDR=127.0.0.1:6379 HTTP_ADDR=127.0.0.1:8081 go run ./examples/redis
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/metrics"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	redisAddr := cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379")
	httpAddr := cmp.Or(os.Getenv("HTTP_ADDR"), "127.0.0.1:8080")
	if err := run(ctx, redisAddr, httpAddr, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, redisAddr, httpAddr string, out io.Writer) error {
	logger := slog.New(slog.NewTextHandler(out, nil))
	app := fx.New(
		fx.NopLogger,
		fx.Supply(logger), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) redis.UniversalClient { // your client: you own and close it
			c := redis.NewUniversalClient(&redis.UniversalOptions{
				Addrs: []string{redisAddr}, ContextTimeoutEnabled: true, // honour ctx deadlines
			})
			lc.Append(fx.StopHook(c.Close))
			return c
		}),
		redislease.Module, // provides fxelection.Backend (+ *redislease.Backend)
		fx.Supply(redislease.Options{KeyPrefix: "myapp:"}), // optional
		fx.Supply(fxelection.Config{Name: "jobs"}),
		fxelection.Module,
		metrics.Module, // the graph's prometheus.Registerer (optional) or the default one; attaches to all electors
		fx.Provide(http.NewServeMux),
		fx.Invoke(func(mux *http.ServeMux, h metrics.Handlers) {
			mux.Handle("/healthz", h.Liveness)
			mux.Handle("/readyz", h.Readiness) // or h.LeaderOnly for active/passive Services
			mux.Handle("/metrics", promhttp.Handler())
		}),
		fx.Invoke(func(lc fx.Lifecycle, mux *http.ServeMux) { serve(lc, httpAddr, mux, logger) }),
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancel()
	return app.Stop(stopCtx)
}

// serve serves mux on addr (an internal port: the probes' bodies carry the
// store's errors) from the app's start to its stop.
func serve(lc fx.Lifecycle, addr string, mux *http.ServeMux, logger *slog.Logger) {
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			logger.Info("serving /metrics, /healthz, /readyz", "addr", ln.Addr().String())
			go func() {
				if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
					logger.Error("serve", "error", err)
				}
			}()
			return nil
		},
		OnStop: srv.Shutdown,
	})
}
