// Package fxgocron runs gocron v2 jobs on a group of instances, with or
// without fx, in one of two ways: every job on an election's leader
// (Module, New, NewTask), or each run of each job under a lock of its own,
// so that the jobs spread over the instances (LockerModule, Locker). It is
// the only fxelection package that imports gocron.
//
// On the leader:
//
//	fx.New(
//		redislease.Module, fxelection.Module, fxgocron.Module, …,
//		fx.Invoke(func(s gocron.Scheduler, e *fxelection.Elector) error {
//			_, err := s.NewJob(gocron.DurationJob(time.Minute),
//				fxgocron.NewTask(e, func(ctx context.Context) error {
//					return report(ctx) // ctx ends when leadership does
//				}))
//			return err
//		}),
//	)
//
// The scheduler asks the elector before every run (schedule.Elector as
// gocron's distributed elector), and NewTask runs each job body inside
// RunIfLeader, so a run is cancelled the moment leadership ends; see package
// schedule for what that promises and what gocron cannot (missed ticks
// during a failover are skipped, not caught up).
//
// With a lock per run:
//
//	fx.New(
//		redislease.Module, // or any backend module
//		lock.Module,       // the *lock.Locker, closed on stop
//		fxgocron.LockerModule,
//		fx.Invoke(func(s gocron.Scheduler, l *fxgocron.Locker) error {
//			_, err := s.NewJob(gocron.CronJob("0 * * * * *", true),
//				l.NewTask(func(ctx context.Context) error {
//					return report(ctx) // ctx ends if the lock is lost
//				}),
//				gocron.WithName("report")) // the lock key: "gocron/report"
//			return err
//		}),
//	)
//
// Without fx: NewLocker, gocron.NewScheduler(gocron.WithDistributedLocker(l)),
// and Locker.Close after the scheduler's Shutdown.
//
// # Which to use
//
// The Elector (Module) runs every job on one instance, the leader, as a
// singleton process would; a run is cancelled the moment leadership ends,
// and a failover skips the ticks until a new leader is elected (about
// LeaseDuration after a leader vanishes). One lease is renewed, whatever
// the number of jobs.
//
// The Locker (LockerModule) takes a lock per job for each run: every
// instance's scheduler fires every tick, and the first to take the job's
// lock runs it while the others skip it. Jobs spread over the instances,
// and a job does not wait for a leader: an instance that dies holding a lock
// delays only that job, for up to the lock's LeaseDuration. Each run costs
// one lock round trip per instance, and a run's term is a fencing token of
// its own. Running each cron tick exactly once needs cron ticks, which are
// aligned across instances, and a MinHold that fits the schedule (below). A
// run whose lock another instance holds is skipped, not retried or caught
// up: gocron moves on to the next tick.
//
// # Exactly once per tick
//
// Instances fire the same tick at slightly different instants: their
// clocks differ, and so do their scheduling delays. If the first instance
// released the job's lock right after a 1ms run, an instance firing 5ms
// later would take it and run the tick again. So Unlock keeps the lock,
// renewed, until LockerOptions.MinHold (default 500ms) has passed since
// the acquisition, then releases it in the background. A tick then runs
// once when MinHold is
// longer than the firing skew between instances plus a lock round trip,
// and the next tick is not skipped everywhere when MinHold is shorter than
// the shortest job interval minus that skew and a release round trip. The
// default, half of the one-second interval of the most frequent cron
// schedule, leaves about half a second on each side: far more than the
// skew of clocks kept by NTP and the round trip to a nearby store. When
// every job runs less often (every minute, say), a longer MinHold, up to
// about half the shortest interval, tolerates more skew.
//
// Close (LockerModule calls it on app stop, after the scheduler's
// shutdown) releases the locks still held that way at once, so that a
// stopped instance leaves nothing held: an instance stopped less than the
// firing skew after a tick lets an instance firing that tick later run it
// again. A stop that is not so close to a tick is not affected.
//
// Only cron schedules (gocron.CronJob, with seconds for sub-minute ones)
// name the same instants on every instance: "every second" is the start
// of each wall-clock second everywhere. A DurationJob counts its interval
// from each scheduler's start, so its ticks differ from one instance to the
// next: the lock keeps runs of a job at least MinHold apart, but up to one
// run per instance per interval happens. gocron.WithStartAt can align a
// DurationJob's first run to a multiple of its interval (gocron's Locker
// documentation suggests it); a cron schedule is simpler.
//
// The instance whose scheduler fires first takes the lock: with one
// instance's clock consistently ahead of the others by less than MinHold,
// it runs every tick. That is gocron's limit too. Ahead by more than
// MinHold, the lock is released before the others fire: each tick runs on
// every instance (see above).
//
// # Runs that outlast the lock
//
// A run's lock is renewed while the run lasts. If renewals fail, the lock's
// Context ends at its renew deadline, before another instance can take the
// lock; gocron's Lock has only Unlock, and gocron neither learns this nor
// stops the run. A job body made with Locker.NewTask gets a context that
// ends then (context.Cause matches lock.ErrLost) and carries the lock's
// lease for fencing (fxelection.LeaseFromContext, package fence); a job that
// ignores its context can still run on two instances at once, and only a
// fencing guard on its writes makes that harmless.
package fxgocron
