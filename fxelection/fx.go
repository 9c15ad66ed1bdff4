package fxelection

import (
	"log/slog"

	"go.uber.org/fx"
)

// GroupTag is the fx value-group tag under which every elector built by
// Module or Named is also provided, so metrics and health handlers can find
// them all: inject `[]*fxelection.Elector` with `group:"fxelection.electors"`.
const GroupTag = `group:"fxelection.electors"`

// Module provides an *Elector built from the Config and Backend in the fx
// graph (and an optional *slog.Logger, used when Config.Logger is nil). Its
// lifecycle hooks start campaigning on start without blocking, and on stop
// drain leader work and release the lease within fx's stop timeout. The
// elector is always built, even if nothing injects it. An invalid Config
// makes the app fail to start with the field-naming error.
var Module = fx.Module("fxelection",
	fx.Provide(NewFromParams),
	fx.Invoke(func(*Elector) {}),
)

// MemoryModule provides a *MemoryBackend as the graph's Backend.
var MemoryModule = fx.Module("fxelection.memory",
	fx.Provide(fx.Annotate(NewMemoryBackend, fx.As(fx.Self()), fx.As(new(Backend)))),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Config    Config
	Backend   Backend
	Logger    *slog.Logger `optional:"true"`
}

// Result is what NewFromParams provides: the elector, also in the group.
type Result struct {
	fx.Out

	Elector *Elector
	Grouped *Elector `group:"fxelection.electors"`
}

// NewFromParams builds an Elector and ties it to the fx lifecycle.
func NewFromParams(p Params) (Result, error) {
	e, err := newHooked(p.Lifecycle, p.Config, p.Backend, p.Logger)
	if err != nil {
		return Result{}, err
	}
	return Result{Elector: e, Grouped: e}, nil
}

// Named returns an option providing an elector for one of several elections
// in one app, tagged `name:"<name>"` and also in the group. It uses the
// graph's Backend (and optional *slog.Logger). cfg.Name defaults to name.
//
//	fx.New(memory.Module,
//		fxelection.Named("billing", fxelection.Config{}),
//		fxelection.Named("reports", fxelection.Config{}),
//		fx.Invoke(fx.Annotate(func(e *fxelection.Elector) {…}, fx.ParamTags(`name:"billing"`))))
func Named(name string, cfg Config) fx.Option {
	if cfg.Name == "" {
		cfg.Name = name
	}
	tag := `name:"` + name + `"`
	return fx.Options(
		fx.Provide(fx.Annotate(
			func(lc fx.Lifecycle, b Backend, log *slog.Logger) (*Elector, *Elector, error) {
				e, err := newHooked(lc, cfg, b, log)
				return e, e, err
			},
			fx.ParamTags(``, ``, `optional:"true"`),
			fx.ResultTags(tag, GroupTag),
		)),
		fx.Invoke(fx.Annotate(func(*Elector) {}, fx.ParamTags(tag))),
	)
}

func newHooked(lc fx.Lifecycle, cfg Config, b Backend, log *slog.Logger) (*Elector, error) {
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	e, err := New(cfg, b)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{
		OnStart: e.Start,
		OnStop:  e.Stop,
	})
	return e, nil
}
