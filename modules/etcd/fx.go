package etcdlease

import (
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides a *Backend, also as the graph's fxelection.Backend, built
// from the application's *clientv3.Client and optional Options. The
// application owns the client (provides it and closes it); the Backend
// never closes it.
//
//	fx.New(
//		fx.Provide(func(lc fx.Lifecycle) (*clientv3.Client, error) {
//			c, err := clientv3.New(clientv3.Config{Endpoints: []string{"localhost:2379"}})
//			if err == nil {
//				lc.Append(fx.StopHook(c.Close))
//			}
//			return c, err
//		}),
//		etcdlease.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//		fxelection.Module,
//	)
var Module = fx.Module("fxelection.etcd",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  *clientv3.Client
	Options Options `optional:"true"`
}

// Result is what NewFromParams provides: the Backend, both as itself and as
// the graph's fxelection.Backend.
type Result struct {
	fx.Out

	Backend fxelection.Backend
	Etcd    *Backend
}

// NewFromParams builds the Backend for Module.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, Etcd: b}, nil
}
