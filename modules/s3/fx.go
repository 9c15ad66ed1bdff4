package s3lease

import (
	"github.com/minio/minio-go/v7"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides the graph's fxelection.Backend (and the *Backend itself)
// from the application's *minio.Client and Options, which are required
// because Options.Bucket is. The application owns the client. Construction
// does no I/O, so the app starts even while the store is down (the elector
// reports errors and retries).
//
//	fx.New(
//		fx.Provide(newMinioClient), // your func(...) (*minio.Client, error)
//		fx.Supply(s3lease.Options{Bucket: "leases"}),
//		s3lease.Module,
//		fxelection.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//	)
var Module = fx.Module("fxelection.s3",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  *minio.Client
	Options Options
}

// Result is what NewFromParams provides.
type Result struct {
	fx.Out

	Backend fxelection.Backend
	S3      *Backend
}

// NewFromParams builds a Backend on the app's client.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, S3: b}, nil
}
