package natslease

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// New returns a cachelease.Backend named "nats" on kv, a bucket the
// application created and owns, through connection nc (may be nil; see
// NewStore for what it is used for). It does no I/O.
func New(kv jetstream.KeyValue, nc *nats.Conn, opts cachelease.Options) (*cachelease.Backend, error) {
	s, err := NewStore(kv, nc)
	if err != nil {
		return nil, err
	}
	return backendOn(s, opts)
}

func backendOn(s *Store, opts cachelease.Options) (*cachelease.Backend, error) {
	if opts.Name == "" {
		opts.Name = "nats"
	}
	return cachelease.New(s, opts)
}

// Module provides a *cachelease.Backend, also as the graph's
// fxelection.Backend, built from the application's jetstream.KeyValue
// bucket, optional *nats.Conn (provide it so that push wake-up resumes at
// once after a reconnect) and optional cachelease.Options. The application owns the
// connection and the bucket; the Backend closes neither (fx stops its
// watch when the app stops).
//
//	fx.New(
//		fx.Provide(func(lc fx.Lifecycle) (*nats.Conn, error) {
//			nc, err := nats.Connect("nats://10.0.0.1:4222")
//			if err == nil {
//				lc.Append(fx.StopHook(nc.Close))
//			}
//			return nc, err
//		}),
//		fx.Provide(func(nc *nats.Conn) (jetstream.KeyValue, error) {
//			js, err := jetstream.New(nc)
//			if err != nil {
//				return nil, err
//			}
//			return js.CreateOrUpdateKeyValue(context.Background(),
//				jetstream.KeyValueConfig{Bucket: "fxelection", Replicas: 3})
//		}),
//		natslease.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//		fxelection.Module,
//	)
var Module = fx.Module("fxelection.nats",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	KeyValue  jetstream.KeyValue
	Conn      *nats.Conn         `optional:"true"`
	Options   cachelease.Options `optional:"true"`
}

// Result is what NewFromParams provides: the Backend, both as itself and as
// the graph's fxelection.Backend.
type Result struct {
	fx.Out

	Backend fxelection.Backend
	Cache   *cachelease.Backend
}

// NewFromParams builds the Backend for Module and stops its watch on app
// stop.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.KeyValue, p.Conn, p.Options)
	if err != nil {
		return Result{}, err
	}
	p.Lifecycle.Append(fx.StopHook(b.Close))
	return Result{Backend: b, Cache: b}, nil
}
