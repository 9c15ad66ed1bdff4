// Command fxexample runs one election on etcd in an fx app and logs every
// leadership it gains or loses, until Ctrl-C. ETCD_ENDPOINTS lists the
// members' client addresses, comma-separated.
//
//	cd modules/etcd
//	ETCD_ENDPOINTS=etcd-0:2379,etcd-1:2379,etcd-2:2379 go run ./fxexample
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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	etcdlease "github.com/fxelection/fxelection/modules/etcd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	endpoints := strings.Split(cmp.Or(os.Getenv("ETCD_ENDPOINTS"), "localhost:2379"), ",")
	if err := run(ctx, endpoints, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, endpoints []string, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(out, nil))), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) (*clientv3.Client, error) { // your client: you own and close it
			c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
			if err == nil {
				lc.Append(fx.StopHook(c.Close))
			}
			return c, err
		}),
		etcdlease.Module, // provides fxelection.Backend (+ *etcdlease.Backend)
		fx.Supply(etcdlease.Options{KeyPrefix: "myapp/"}), // optional
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
