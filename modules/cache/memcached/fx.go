package memcachedlease

import (
	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// Module provides a *cachelease.Backend, also as the graph's
// fxelection.Backend, built from the application's *memcache.Client and
// optional cachelease.Options. The application owns the client; the
// Backend never closes it.
//
//	fx.New(
//		fx.Provide(func() (*memcache.Client, error) {
//			// A ServerSet, not memcache.New: the same election must land
//			// on the same server whatever order each candidate lists them.
//			servers, err := memcachedlease.NewServerSet("10.0.0.1:11211", "10.0.0.2:11211")
//			if err != nil {
//				return nil, err
//			}
//			c := memcache.NewFromSelector(servers)
//			c.Timeout = time.Second
//			return c, nil
//		}),
//		memcachedlease.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//		fxelection.Module,
//	)
var Module = fx.Module("fxelection.memcached",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  *memcache.Client
	Options cachelease.Options `optional:"true"`
}

// Result is what NewFromParams provides: the Backend, both as itself and as
// the graph's fxelection.Backend.
type Result struct {
	fx.Out

	Backend fxelection.Backend
	Cache   *cachelease.Backend
}

// NewFromParams builds the Backend for Module.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, Cache: b}, nil
}
