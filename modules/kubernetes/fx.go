package kubelease

import (
	"go.uber.org/fx"
	"k8s.io/client-go/kubernetes"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides a *Backend, also as the graph's fxelection.Backend, built
// from the application's kubernetes.Interface and optional Options. The
// application owns the client (and its rate limiter: set rest.Config's QPS
// and Burst for the number of elections, see the package documentation).
//
//	fx.New(
//		fx.Provide(func() (kubernetes.Interface, error) {
//			cfg, err := rest.InClusterConfig()
//			if err != nil {
//				return nil, err
//			}
//			cfg.QPS, cfg.Burst = 50, 100
//			return kubernetes.NewForConfig(cfg)
//		}),
//		fx.Supply(kubelease.Options{Namespace: "billing"}),
//		kubelease.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//		fxelection.Module,
//	)
var Module = fx.Module("fxelection.kubernetes",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  kubernetes.Interface
	Options Options `optional:"true"`
}

// Result is what NewFromParams provides: the Backend, both as itself and as
// the graph's fxelection.Backend.
type Result struct {
	fx.Out

	Backend    fxelection.Backend
	Kubernetes *Backend
}

// NewFromParams builds the Backend for Module.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, Kubernetes: b}, nil
}
