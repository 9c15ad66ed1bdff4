// Command memcached runs one election on memcached in an fx app and logs
// every leadership it gains or loses, until Ctrl-C. MEMCACHED_ADDRS lists
// the servers, comma-separated; every candidate must list the same set.
//
//	MEMCACHED_ADDRS=10.0.0.1:11211,10.0.0.2:11211 go run ./examples/memcached
package main

import (
	"cmp"
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	memcachedlease "github.com/fxelection/fxelection/modules/cache/memcached"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	addrs := strings.Split(cmp.Or(os.Getenv("MEMCACHED_ADDRS"), "localhost:11211"), ",")
	if err := run(ctx, addrs, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, addrs []string, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(out, nil))), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) (*memcache.Client, error) { // your client: you own and close it
			// Shard by the set of servers, not their order (memcache.New picks by
			// position: candidates listing them in another order would both lead).
			servers, err := memcachedlease.NewServerSet(addrs...)
			if err != nil {
				return nil, err
			}
			c := memcache.NewFromSelector(servers)
			c.Timeout = time.Second // bounds a call abandoned at its context's end
			lc.Append(fx.StopHook(c.Close))
			return c, nil
		}),
		memcachedlease.Module, // provides fxelection.Backend (+ *cachelease.Backend)
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
