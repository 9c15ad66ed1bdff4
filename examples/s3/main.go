// Command s3 runs one election on S3 (or MinIO) in an fx app and logs
// every leadership it gains or loses, until Ctrl-C. The bucket "leases"
// must exist; credentials come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY.
//
//	S3_ENDPOINT=s3.eu-west-1.amazonaws.com go run ./examples/s3
//	S3_ENDPOINT=127.0.0.1:9000 S3_INSECURE=true go run ./examples/s3   # a local MinIO
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

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	endpoint := cmp.Or(os.Getenv("S3_ENDPOINT"), "s3.amazonaws.com")
	secure := os.Getenv("S3_INSECURE") != "true"
	if err := run(ctx, endpoint, secure, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the app until ctx is done.
func run(ctx context.Context, endpoint string, secure bool, out io.Writer) error {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(out, nil))), // the electors log to it
		fx.Provide(func(lc fx.Lifecycle) (*minio.Client, error) { // your client
			tr, err := minio.DefaultTransport(secure)
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(tr.CloseIdleConnections)) // leave no connection behind
			return minio.New(endpoint, &minio.Options{Creds: credentials.NewEnvAWS(), Secure: secure, Transport: tr})
		}),
		fx.Supply(s3lease.Options{Bucket: "leases"}), // required, must exist; Prefix defaults to "fxelection/"
		s3lease.Module, // provides fxelection.Backend (+ *s3lease.Backend)
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
