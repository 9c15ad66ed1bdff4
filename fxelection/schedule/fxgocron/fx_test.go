package fxgocron_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
)

// TestModuleStopsSchedulerFirst: on app stop the module shuts the scheduler
// down (cancelling the running job) while the elector still leads, and only
// then does the elector stop and release.
func TestModuleStopsSchedulerFirst(t *testing.T) {
	started := make(chan struct{}, 1)
	leadingAtCancel := make(chan bool, 1)
	var elector *fxelection.Elector
	app := fx.New(
		fx.NopLogger,
		memory.Module,
		fx.Supply(fxelection.Config{Name: "jobs", Identity: "only",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}),
		fxelection.Module,
		fxgocron.Module,
		fx.Supply([]gocron.SchedulerOption{gocron.WithStopTimeout(5 * time.Second)}),
		fx.Populate(&elector),
		fx.Invoke(func(s gocron.Scheduler, e *fxelection.Elector) error {
			_, err := s.NewJob(gocron.DurationJob(50*time.Millisecond), fxgocron.NewTask(e, func(ctx context.Context) error {
				select {
				case started <- struct{}{}:
				default:
				}
				<-ctx.Done()
				select {
				case leadingAtCancel <- e.IsLeader():
				default:
				}
				return nil
			}), gocron.WithSingletonMode(gocron.LimitModeReschedule))
			return err
		}),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job never ran")
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !<-leadingAtCancel {
		t.Fatal("the job was cancelled by the elector stopping, not by the scheduler shutting down first")
	}
	if elector.IsLeader() {
		t.Fatal("elector still leads after app stop")
	}
}
