package bloblease

import (
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides the graph's fxelection.Backend (and the *Backend itself)
// from the application's *azblob.Client and Options, which are required
// because Options.Container is. The application owns the client and
// creates the container. Construction does no I/O, so the app starts even
// while the store is down (the elector reports errors and retries).
//
//	fx.New(
//		fx.Provide(newAzblobClient), // your func(...) (*azblob.Client, error)
//		fx.Supply(bloblease.Options{Container: "leases"}),
//		bloblease.Module,
//		fxelection.Module,
//		fx.Supply(fxelection.Config{Name: "billing", LeaseDuration: 15 * time.Second}),
//	)
var Module = fx.Module("fxelection.blob",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  *azblob.Client
	Options Options
}

// Result is what NewFromParams provides.
type Result struct {
	fx.Out

	Backend fxelection.Backend
	Blob    *Backend
}

// NewFromParams builds a Backend on the app's client.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, Blob: b}, nil
}
