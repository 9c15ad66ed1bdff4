// Command nats runs one election on a NATS JetStream key-value bucket in an
// fx app and logs every leadership it gains or loses, until Ctrl-C.
//
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/nats
package main

import (
	"cmp"
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	natslease "github.com/fxelection/fxelection/modules/cache/nats"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cmp.Or(os.Getenv("NATS_URL"), nats.DefaultURL), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, url string, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(out, nil))), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) (*nats.Conn, error) { // your connection (optional in the graph:
			nc, err := nats.Connect(url) // with it, push resumes at once after a reconnect)
			if err == nil {
				lc.Append(fx.StopHook(nc.Close))
			}
			return nc, err
		}),
		fx.Provide(func(nc *nats.Conn) (jetstream.KeyValue, error) { // your bucket
			js, err := jetstream.New(nc)
			if err != nil {
				return nil, err
			}
			return js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{
				Bucket: "fxelection", Replicas: 1, // 3 or 5 on a cluster: Raft-replicated
			})
		}),
		natslease.Module, // provides fxelection.Backend (+ *cachelease.Backend); stops its watch on app stop
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
