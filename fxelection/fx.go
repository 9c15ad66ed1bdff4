package fxelection

import (
	"context"
	"log/slog"
	"sync/atomic"

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

	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Config     Config
	Backend    Backend
	Group      *Group       `optional:"true"`
	Logger     *slog.Logger `optional:"true"`
}

// fxResult is what Module provides: the elector, also in the value group.
type fxResult struct {
	fx.Out

	Elector *Elector
	Grouped *Elector `group:"fxelection.electors"`
}

func newFromParams(p params) (fxResult, error) {
	e, err := newHooked(p.Lifecycle, p.Shutdowner, p.Config, p.Backend, p.Group, p.Logger)
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
			func(lc fx.Lifecycle, sd fx.Shutdowner, b Backend, g *Group, log *slog.Logger) (*Elector, *Elector, error) {
				e, err := newHooked(lc, sd, cfg, b, g, log)
				return e, e, err
			},
			fx.ParamTags(``, ``, ``, `optional:"true"`, `optional:"true"`),
			fx.ResultTags(tag, GroupTag),
		)),
		fx.Invoke(fx.Annotate(func(*Elector) {}, fx.ParamTags(tag))),
	)
}

// newHooked builds an elector (in g when g is not nil; g's backend must
// be b) and ties it to the app (Hook).
func newHooked(lc fx.Lifecycle, sd fx.Shutdowner, cfg Config, b Backend, g *Group, log *slog.Logger) (*Elector, error) {
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
	e.Hook(lc, sd)
	return e, nil
}

// Hook ties e to an fx app: Start on the app's start, Stop on its stop,
// and, with Config.ExitOnLoss and a non-nil sd, sd.Shutdown with
// fx.ExitCode(1) when e stops leading for any other reason than Stop or
// after the app's stop has begun. Module, Named and configuration
// documents call it; call it once for an elector provided to fx otherwise.
// The shutdown is asked for from an observer (Shutdown does not block)
// and logged at Warn.
func (e *Elector) Hook(lc fx.Lifecycle, sd fx.Shutdowner) {
	var stopping atomic.Bool
	if e.cfg.ExitOnLoss && sd != nil {
		exitOnLoss(e, sd, &stopping)
	}
	lc.Append(fx.Hook{OnStart: e.Start, OnStop: func(ctx context.Context) error {
		stopping.Store(true)
		return e.Stop(ctx)
	}})
}
