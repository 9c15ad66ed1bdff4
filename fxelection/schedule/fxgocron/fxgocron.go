package fxgocron

import (
	"context"
	"fmt"

	"github.com/go-co-op/gocron/v2"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/schedule"
)

// schedule.Elector is a gocron.Elector.
var _ gocron.Elector = (*schedule.Elector)(nil)

// Module provides a gocron.Scheduler whose jobs run only on the leader of
// the graph's *fxelection.Elector (add fxelection.Module and a backend
// module). The scheduler starts on app start and shuts down on app stop
// before the elector stops: it depends on the elector, so fx runs its stop
// hook first, and a run in flight ends (or is cancelled) while its leader
// still holds the lease. Scheduler options come from an optional
// []gocron.SchedulerOption in the graph (fx.Supply it).
var Module = fx.Module("fxgocron", fx.Provide(NewFromParams))

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Elector   *fxelection.Elector
	Options   []gocron.SchedulerOption `optional:"true"`
}

// NewFromParams builds a leader-only scheduler (New) and ties it to the fx
// lifecycle: Start on start, ShutdownWithContext on stop (which cancels the
// jobs' contexts and waits for them within fx's stop timeout).
func NewFromParams(p Params) (gocron.Scheduler, error) {
	s, err := New(p.Elector, p.Options...)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error { s.Start(); return nil },
		OnStop: func(ctx context.Context) error {
			if err := s.ShutdownWithContext(ctx); err != nil {
				return fmt.Errorf("fxgocron: shut down scheduler: %w", err)
			}
			return nil
		},
	})
	return s, nil
}

// New returns a gocron scheduler that asks e before every run
// (gocron.WithDistributedElector(schedule.NewElector(e))), plus opts. The
// caller starts it and must shut it down before stopping e. Wrap job bodies
// with NewTask so runs end with leadership.
func New(e *fxelection.Elector, opts ...gocron.SchedulerOption) (gocron.Scheduler, error) {
	all := append([]gocron.SchedulerOption{gocron.WithDistributedElector(schedule.NewElector(e))}, opts...)
	s, err := gocron.NewScheduler(all...)
	if err != nil {
		return nil, fmt.Errorf("fxgocron: new scheduler: %w", err)
	}
	return s, nil
}

// NewTask returns a gocron task that runs fn only while e leads, with a
// context that is cancelled when leadership ends or the scheduler shuts
// down, and that carries the lease for fenced writes (schedule.Task).
func NewTask(e *fxelection.Elector, fn func(ctx context.Context) error) gocron.Task {
	return gocron.NewTask(schedule.Task(e, fn))
}
