package pool

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides a *Pool for cfg on the graph's fxelection.Backend (and
// its *slog.Logger, if any, when cfg.Logger is nil), started with the app
// and stopped (shards and member slot released) on its stop. For several
// pools in one app use Named.
func Module(cfg Config) fx.Option {
	return fx.Module("fxelection.pool", fx.Provide(
		fx.Annotate(func(lc fx.Lifecycle, b fxelection.Backend, log *slog.Logger) (*Pool, error) {
			return newHooked(lc, cfg, b, log)
		}, fx.ParamTags(``, ``, `optional:"true"`)),
	), fx.Invoke(func(*Pool) {}))
}

// Named provides a *Pool for cfg tagged `name:"<name>"`, as Module does;
// cfg.Name defaults to name.
func Named(name string, cfg Config) fx.Option {
	if cfg.Name == "" {
		cfg.Name = name
	}
	tag := `name:"` + name + `"`
	return fx.Options(
		fx.Provide(fx.Annotate(func(lc fx.Lifecycle, b fxelection.Backend, log *slog.Logger) (*Pool, error) {
			return newHooked(lc, cfg, b, log)
		}, fx.ParamTags(``, ``, `optional:"true"`), fx.ResultTags(tag))),
		fx.Invoke(fx.Annotate(func(*Pool) {}, fx.ParamTags(tag))),
	)
}

func newHooked(lc fx.Lifecycle, cfg Config, b fxelection.Backend, log *slog.Logger) (*Pool, error) {
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	p, err := New(cfg, b)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{OnStart: p.Start, OnStop: p.Stop})
	return p, nil
}
