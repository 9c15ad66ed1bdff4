package redislease

import (
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides a *Backend, also as the graph's fxelection.Backend, built
// from the application's redis.UniversalClient and optional Options. The
// application owns the client (provides it and closes it); the Backend
// never closes it.
//
//	fx.New(
//		fx.Provide(func() redis.UniversalClient {
//			return redis.NewUniversalClient(&redis.UniversalOptions{
//				Addrs: []string{"localhost:6379"}, ContextTimeoutEnabled: true,
//			})
//		}),
//		redislease.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//		fxelection.Module,
//	)
var Module = fx.Module("fxelection.redis",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  redis.UniversalClient
	Options Options `optional:"true"`
}

// Result is what NewFromParams provides: the Backend, both as itself and as
// the graph's fxelection.Backend.
type Result struct {
	fx.Out

	Backend fxelection.Backend
	Redis   *Backend
}

// NewFromParams builds the Backend for Module.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, Redis: b}, nil
}
