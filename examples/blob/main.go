// Command blob runs one election on Azure Blob Storage (or Azurite) in an
// fx app and logs every leadership it gains or loses, until Ctrl-C. The
// container "leases" must exist.
//
//	AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=https;AccountName=…' go run ./examples/blob
package main

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, connectionString string, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(out, nil))), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) (*azblob.Client, error) { // your client
			tr := http.DefaultTransport.(*http.Transport).Clone()
			lc.Append(fx.StopHook(tr.CloseIdleConnections)) // leave no connection behind
			return azblob.NewClientFromConnectionString(connectionString, &azblob.ClientOptions{
				ClientOptions: policy.ClientOptions{Transport: &http.Client{Transport: tr}},
			})
		}),
		fx.Supply(bloblease.Options{Container: "leases"}), // required, must exist; Prefix defaults to "fxelection/"
		bloblease.Module, // provides fxelection.Backend (+ *bloblease.Backend)
		fx.Supply(fxelection.Config{Name: "billing", Timing: fxelection.Timing{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second}}),
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
