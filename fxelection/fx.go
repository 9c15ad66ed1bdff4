package fxelection

import (
	"log/slog"

	"go.uber.org/fx"
)

// The fx plumbing: everything fx-specific of package fxelection is here.

// GroupTag is the fx value-group tag under which every elector built by
// Module or Named is also provided, so metrics and health handlers can find
// them all: inject `[]*fxelection.Elector` with `group:"fxelection.electors"`.
// (An fx value group; not to be confused with Group.)
const GroupTag = `group:"fxelection.electors"`

// Module provides an *Elector built from the Config and Backend in the fx
// graph (and an optional *slog.Logger, used when Config.Logger is nil, and
// an optional *Group, which the elector then joins). Its lifecycle hooks
// start campaigning on start without blocking, and on stop drain leader
// work and release the lease within fx's stop timeout. The elector is
// always built, even if nothing injects it. An invalid Config makes the app
// fail to start with the field-naming error.
var Module = fx.Module("fxelection",
	fx.Provide(newFromParams),
	fx.Invoke(func(*Elector) {}),
)

// params are Module's dependencies.
type params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Config    Config
	Backend   Backend
	Group     *Group       `optional:"true"`
	Logger    *slog.Logger `optional:"true"`
}

// fxResult is what Module provides: the elector, also in the value group.
type fxResult struct {
	fx.Out

	Elector *Elector
	Grouped *Elector `group:"fxelection.electors"`
}

func newFromParams(p params) (fxResult, error) {
	e, err := newHooked(p.Lifecycle, p.Config, p.Backend, p.Group, p.Logger)
	if err != nil {
		return fxResult{}, err
	}
	return fxResult{Elector: e, Grouped: e}, nil
}

// Named returns an option providing an elector for one of several elections
// in one app, tagged `name:"<name>"` and also in the value group (GroupTag).
// It uses the graph's Backend and optional *slog.Logger; cfg.Name defaults
// to name. Provide a Group too (fx.Provide(fxelection.NewGroup)) and every
// Named elector joins it: renewals in batches, shared start workers.
//
//	fx.New(memory.Module,
//		fx.Provide(fxelection.NewGroup),
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
			func(lc fx.Lifecycle, b Backend, g *Group, log *slog.Logger) (*Elector, *Elector, error) {
				e, err := newHooked(lc, cfg, b, g, log)
				return e, e, err
			},
			fx.ParamTags(``, ``, `optional:"true"`, `optional:"true"`),
			fx.ResultTags(tag, GroupTag),
		)),
		fx.Invoke(fx.Annotate(func(*Elector) {}, fx.ParamTags(tag))),
	)
}

// newHooked builds an elector (in g when g is not nil; g's backend must
// be b) and ties it to lc: Start on start, Stop on stop.
func newHooked(lc fx.Lifecycle, cfg Config, b Backend, g *Group, log *slog.Logger) (*Elector, error) {
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	var (
		e   *Elector
		err error
	)
	if g != nil {
		e, err = g.New(cfg)
	} else {
		e, err = New(cfg, b)
	}
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{OnStart: e.Start, OnStop: e.Stop})
	return e, nil
}
