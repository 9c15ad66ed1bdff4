package fxgocron_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
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
			Timing: fxelection.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}}),
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
	case <-time.After(time.Minute):
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

// TestLockerModuleStopOrder: LockerModule provides a scheduler with the
// Locker (from the graph's *lock.Locker and LockerOptions) and the Locker
// itself; on app stop the scheduler shuts down first, cancelling a run
// while its lock is held and the Locker still open, and then the Locker
// closes, releasing at once the locks MinHold still held.
func TestLockerModuleStopOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		other, err := lock.New(store, lock.Options{Identity: "other"})
		if err != nil {
			t.Fatal(err)
		}
		heldAtCancel, openAtCancel := make(chan error, 1), make(chan error, 1)
		ran := make(chan string, 2)
		app := fx.New(
			fx.NopLogger,
			fx.Provide(func() (*lock.Locker, error) { return lock.New(store, lock.Options{Identity: "app"}) }),
			fx.Supply(fxgocron.LockerOptions{Prefix: "jobs/"}),
			fxgocron.LockerModule,
			fx.Supply([]gocron.SchedulerOption{gocron.WithStopTimeout(5 * time.Second)}),
			fx.Invoke(func(s gocron.Scheduler, l *fxgocron.Locker) error {
				if _, err := s.NewJob(gocron.DurationJob(time.Hour), l.NewTask(func(ctx context.Context) error {
					ran <- "long"
					<-ctx.Done()
					lk, err := other.TryAcquire(context.Background(), "jobs/long")
					if lk != nil {
						_ = lk.Release(context.Background())
					}
					heldAtCancel <- err
					// The Locker is not closed yet: it still takes locks
					// (released by Close at once).
					probe, err := l.Lock(context.Background(), "probe")
					if err == nil {
						err = probe.Unlock(context.Background())
					}
					openAtCancel <- err
					return nil
				}), gocron.WithName("long"), gocron.WithStartAt(gocron.WithStartImmediately())); err != nil {
					return err
				}
				_, err := s.NewJob(gocron.DurationJob(time.Hour), l.NewTask(func(context.Context) error {
					ran <- "short"
					return nil
				}), gocron.WithName("short"), gocron.WithStartAt(gocron.WithStartImmediately()))
				return err
			}),
		)
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		recv(t, ran, "first run")
		recv(t, ran, "second run")
		synctest.Wait() // the short run's Unlock: its release deferred to MinHold
		if lk, err := other.TryAcquire(context.Background(), "jobs/short"); !errors.Is(err, lock.ErrLocked) {
			if lk != nil {
				_ = lk.Release(context.Background())
			}
			t.Fatalf("the short run's lock before MinHold: %v, want held", err)
		}
		began := time.Now()
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, heldAtCancel, "cancellation of the long run"); !errors.Is(err, lock.ErrLocked) {
			t.Fatalf("the long run was cancelled after its lock was released (TryAcquire: %v): the Locker closed before the scheduler shut down", err)
		}
		if err := recv(t, openAtCancel, "Lock at the long run's cancellation"); err != nil {
			t.Fatalf("Lock when the scheduler cancelled the run: %v; want the Locker still open (closed after the scheduler)", err)
		}
		if d := time.Since(began); d != 0 {
			t.Errorf("app stop took %v, want no wait for MinHold", d)
		}
		for _, key := range []string{"jobs/long", "jobs/short", "jobs/probe"} {
			lk, err := other.TryAcquire(context.Background(), key)
			if err != nil {
				t.Fatalf("%s after app stop: %v, want free", key, err)
			}
			if err := lk.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}
