package zklease

import (
	"github.com/go-zookeeper/zk"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides a *Backend, also as the graph's fxelection.Backend, built
// from the application's *zk.Conn and optional Options. The application
// owns the connection (provides it and closes it); the Backend never
// closes it, and its Close is called when the app stops (after the
// electors, which release their leases first).
//
//	fx.New(
//		fx.Provide(func(lc fx.Lifecycle) (*zk.Conn, error) {
//			c, _, err := zk.Connect([]string{"localhost:2181"}, 15*time.Second)
//			if err == nil {
//				lc.Append(fx.StopHook(c.Close))
//			}
//			return c, err
//		}),
//		zklease.Module,
//		// The session timeout asked for: RenewDeadline is checked against it.
//		fx.Supply(zklease.Options{SessionTimeout: 15 * time.Second}),
//		fx.Supply(fxelection.Config{Name: "billing"}),
//		fxelection.Module,
//	)
var Module = fx.Module("fxelection.zookeeper",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Conn      *zk.Conn
	Options   Options `optional:"true"`
}

// Result is what NewFromParams provides: the Backend, both as itself and as
// the graph's fxelection.Backend.
type Result struct {
	fx.Out

	Backend   fxelection.Backend
	ZooKeeper *Backend
}

// NewFromParams builds the Backend for Module and closes it (Close: push
// wake-up and the holder-side expiry stop) when the app stops.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Conn, p.Options)
	if err != nil {
		return Result{}, err
	}
	p.Lifecycle.Append(fx.StopHook(b.Close))
	return Result{Backend: b, ZooKeeper: b}, nil
}
