package fxgocron

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/lock"
)

// Defaults for LockerOptions' zero values.
const (
	// DefaultPrefix is LockerOptions.Prefix's default.
	DefaultPrefix = "gocron/"
	// DefaultMinHold is LockerOptions.MinHold's default: half the
	// shortest interval a cron schedule can have (one second, with
	// seconds), so that the firing skew between instances plus a lock
	// round trip may take up to about this long on either side of it.
	DefaultMinHold = 500 * time.Millisecond
)

var (
	// ErrJobName means a job's name cannot make a lock key: it is empty,
	// Prefix and the name together break the rule for lock keys (then the
	// error also matches lock.ErrInvalidKey), or it is the default name
	// gocron gives every job made with Locker.NewTask (such a job needs
	// gocron.WithName). The run is skipped; gocron reports the error to the
	// job's AfterLockError listener.
	ErrJobName = errors.New("fxgocron: job name")
	// ErrLockerClosed means the Locker was closed: it takes no more locks.
	ErrLockerClosed = errors.New("fxgocron: locker closed")
	// ErrNoLock is the error of a run of a Locker.NewTask job that holds
	// no lock of that Locker: the scheduler's locker is another one, the
	// job disables it (gocron.WithDisabledDistributedJobLocker), or the
	// scheduler has an elector, which gocron asks instead of a locker. The
	// job's body is not run.
	ErrNoLock = errors.New("fxgocron: run holds no lock of this Locker")
)

// LockerOptions configures a Locker. The zero value of every field means
// its documented default.
type LockerOptions struct {
	// Prefix is put before each job's name to make its lock key, so that
	// the locks of jobs do not collide with elections or other locks on
	// the same backend. Prefix and the longest job name together must
	// satisfy the rule for lock keys (lock.ErrInvalidKey). Default:
	// DefaultPrefix ("gocron/").
	Prefix string

	// MinHold is how long after it was acquired a run's lock is held at
	// least: Unlock of a run that took less keeps the lock, renewed, and
	// releases it once MinHold has passed since the acquisition. It is what
	// makes a cron tick run once across instances: instances fire the
	// same tick at slightly different instants, and a lock released right
	// after a short run would be taken again by a later one. It must be
	// longer than the firing skew between instances (clock offset plus
	// scheduling delay) plus a lock round trip, and shorter than the
	// shortest interval of the scheduler's jobs minus the same skew and a
	// release round trip; otherwise a tick can run twice (too short) or
	// the next tick be skipped everywhere (too long). A negative value
	// releases as soon as the run ends. Default: DefaultMinHold (500ms).
	MinHold time.Duration
}

// withDefaults returns o with defaults filled in.
func (o LockerOptions) withDefaults() LockerOptions {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MinHold == 0 {
		o.MinHold = DefaultMinHold
	}
	return o
}

// Validate fills in defaults and checks o. The error is a
// *fxelection.ConfigError whose Field names the bad LockerOptions field.
func (o LockerOptions) Validate() error {
	o = o.withDefaults()
	if p := backendkit.UserNameProblem(o.Prefix); p != "" {
		return &fxelection.ConfigError{Field: "Prefix", Reason: p}
	}
	if len(o.Prefix) >= backendkit.MaxNameLen {
		return &fxelection.ConfigError{Field: "Prefix",
			Reason: fmt.Sprintf("must be shorter than %d bytes (is %d), to leave room for a job name", backendkit.MaxNameLen, len(o.Prefix))}
	}
	return nil
}

// Locker is a gocron.Locker (gocron.WithDistributedLocker) that takes a
// lock of a *lock.Locker for each run of each job, so that the runs of a
// job spread over the instances and each cron tick runs on one of them.
//
// Lock makes one attempt (lock.Locker.TryAcquire) on the key Prefix + job
// name and never waits: if another instance holds the lock, the error
// matches lock.ErrLocked and gocron skips the run (no retry, no catch-up).
// The Unlock gocron calls after the run releases the lock no sooner than
// MinHold after the acquisition; until then the lock stays held, renewed.
// Close releases the locks still held that way at once.
//
// A run that outlasts its lock is not stopped by gocron: only a job body
// made with NewTask, or one watching its context, learns that the lock was
// lost.
//
// Its methods are safe for concurrent use.
type Locker struct {
	locker  *lock.Locker
	opts    LockerOptions
	timeout time.Duration // bound on one release: the lock.Locker's RenewDeadline

	mu      sync.Mutex
	runs    map[context.Context]*runLock // runs in flight, by the job context gocron passes to Lock
	pending map[*runLock]struct{}        // unlocked, release deferred to MinHold
	closed  bool
	wg      sync.WaitGroup // deferred releases not yet returned
}

// gocron.Locker and gocron.Lock guards.
var (
	_ gocron.Locker = (*Locker)(nil)
	_ gocron.Lock   = (*runLock)(nil)
)

// NewLocker returns a Locker taking locks of l. It returns a
// *fxelection.ConfigError naming the first bad LockerOptions field. Close
// it after the schedulers that use it have shut down.
func NewLocker(l *lock.Locker, opts LockerOptions) (*Locker, error) {
	if l == nil {
		return nil, errors.New("fxgocron: new locker: *lock.Locker is nil")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Locker{
		locker:  l,
		opts:    opts.withDefaults(),
		timeout: l.Options().RenewDeadline,
		runs:    map[context.Context]*runLock{},
		pending: map[*runLock]struct{}{},
	}, nil
}

// Options returns the Locker's options with defaults filled in.
func (l *Locker) Options() LockerOptions { return l.opts }

// lockedTaskName is the name gocron gives a job made with NewTask and no
// gocron.WithName: the same for every such job.
var lockedTaskName = runtime.FuncForPC(reflect.ValueOf((*lockedTask)(nil).run).Pointer()).Name()

// key returns the lock key of job name.
func (l *Locker) key(name string) (string, error) {
	switch name {
	case "":
		return "", fmt.Errorf("%w: empty", ErrJobName)
	case lockedTaskName:
		return "", fmt.Errorf("%w: the default name of every job made with Locker.NewTask; give each gocron.WithName", ErrJobName)
	}
	key := l.opts.Prefix + name
	if p := backendkit.UserNameProblem(key); p != "" {
		return "", fmt.Errorf("%w: %w: prefix and name: %s", ErrJobName, lock.ErrInvalidKey, p)
	}
	return key, nil
}

// Lock implements gocron.Locker: one attempt to take the lock on Prefix +
// key (gocron passes the job's name as key), without waiting. If another
// holder has it, the error matches lock.ErrLocked; a name that cannot make
// a key gives an error matching ErrJobName; after Close, ErrLockerClosed;
// any other error is a store failure. gocron runs the job only when Lock
// returns no error.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	k, err := l.key(key)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, ErrLockerClosed
	}
	lk, err := l.locker.TryAcquire(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("fxgocron: lock job: %w", err)
	}
	r := &runLock{l: l, lk: lk, jobCtx: ctx, acquired: time.Now()}
	l.mu.Lock()
	if l.closed { // closed during the attempt: give the lock back
		l.mu.Unlock()
		_ = r.release(context.WithoutCancel(ctx))
		return nil, ErrLockerClosed
	}
	if reflect.TypeOf(ctx).Comparable() {
		// A run of the same job whose lock was lost may still be in
		// flight: this run's lock replaces it, its Unlock leaves this one.
		l.runs[ctx] = r
	}
	l.mu.Unlock()
	return r, nil
}

// runLock is one run's lock: a gocron.Lock.
type runLock struct {
	l        *Locker
	lk       *lock.Lock
	jobCtx   context.Context
	acquired time.Time

	// Guarded by l.mu.
	unlocked bool
	timer    *time.Timer // the deferred release
}

// Unlock implements gocron.Lock. It releases the lock once MinHold has
// passed since the acquisition: at once if it has, otherwise in the
// background when it does (or at Close). A release ignores ctx's
// cancellation (gocron passes the job's context, which ends when the
// scheduler shuts down) and is bounded by the lock.Locker's RenewDeadline;
// if it fails, the lock expires after LeaseDuration. Later calls return nil.
func (r *runLock) Unlock(ctx context.Context) error {
	l := r.l
	l.mu.Lock()
	if r.unlocked {
		l.mu.Unlock()
		return nil
	}
	r.unlocked = true
	if l.runs[r.jobCtx] == r {
		delete(l.runs, r.jobCtx)
	}
	if wait := time.Until(r.acquired.Add(l.opts.MinHold)); wait > 0 && !l.closed {
		l.pending[r] = struct{}{}
		l.wg.Add(1)
		r.timer = time.AfterFunc(wait, r.releaseDue) // runs after l.mu is unlocked
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	return r.release(context.WithoutCancel(ctx))
}

// releaseDue is the deferred release, unless Close took it first.
func (r *runLock) releaseDue() {
	l := r.l
	defer l.wg.Done()
	l.mu.Lock()
	_, ok := l.pending[r]
	delete(l.pending, r)
	l.mu.Unlock()
	if ok {
		_ = r.release(context.Background()) // on failure the lease expires
	}
}

// release releases the lock within ctx, and within the Locker's timeout.
func (r *runLock) release(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, r.l.timeout)
	defer cancel()
	if err := r.lk.Release(rctx); err != nil {
		return fmt.Errorf("fxgocron: unlock job: %w", err)
	}
	return nil
}

// Close makes the Locker refuse new locks (ErrLockerClosed) and releases at
// once every lock whose release Unlock deferred, waiting for deferred
// releases already under way; ctx bounds the wait, each release is bounded
// by the lock.Locker's RenewDeadline. It returns the releases' errors. Shut
// the schedulers that use the Locker down first: a run still in flight
// keeps its lock until its Unlock, which then releases at once. Closing
// twice is harmless.
func (l *Locker) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	var due []*runLock
	for r := range l.pending {
		delete(l.pending, r)
		due = append(due, r)
		if r.timer.Stop() {
			l.wg.Done() // its releaseDue will not run
		}
	}
	l.mu.Unlock()

	errs := make([]error, len(due))
	var rel sync.WaitGroup
	for i, r := range due {
		rel.Go(func() { errs[i] = r.release(ctx) })
	}
	rel.Wait()

	waited := make(chan struct{})
	go func() { l.wg.Wait(); close(waited) }() // returns within one release's bound
	select {
	case <-waited:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("fxgocron: close locker: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// NewTask returns a gocron task that runs fn under the lock the Locker took
// for the run: fn's context ends when the lock's Context does (the lock
// was lost, at the latest at its renew deadline, which is before another
// instance can take it; context.Cause then matches lock.ErrLost) and when
// the job's context ends (the scheduler shuts down, the job is removed).
// It carries the lock's lease, so fencing guards that read the term from a
// context accept it (fxelection.LeaseFromContext, package fence). gocron
// itself never stops a run: fn must watch its context to stop when the
// lock is lost.
//
// Give each such job a name of its own (gocron.WithName): without one,
// every NewTask job has the same default name, and Lock refuses it
// (ErrJobName). A run that holds no lock of this Locker returns ErrNoLock
// without running fn. The task relies on gocron passing the same job
// context to Lock and to the task, as gocron v2 does.
func (l *Locker) NewTask(fn func(ctx context.Context) error) gocron.Task {
	t := &lockedTask{l: l, fn: fn}
	return gocron.NewTask(t.run)
}

// lockedTask is a job body made with NewTask.
type lockedTask struct {
	l  *Locker
	fn func(ctx context.Context) error
}

// run runs fn under the lock held for jobCtx's run.
func (t *lockedTask) run(jobCtx context.Context) error {
	t.l.mu.Lock()
	r := t.l.runs[jobCtx]
	t.l.mu.Unlock()
	if r == nil {
		return ErrNoLock
	}
	ctx, cancel := context.WithCancelCause(r.lk.Context())
	defer cancel(nil)
	stop := context.AfterFunc(jobCtx, func() { cancel(context.Cause(jobCtx)) })
	defer stop()
	return t.fn(ctx)
}

// LockerModule provides a gocron.Scheduler whose jobs each take a lock per
// run (gocron.WithDistributedLocker) from a Locker on the graph's
// *lock.Locker, and that Locker, for Locker.NewTask. The application
// provides the *lock.Locker (lock.New on its backend); LockerOptions and
// []gocron.SchedulerOption are optional in the graph (fx.Supply them). The
// scheduler starts on app start; on app stop it shuts down first (its runs
// end or are cancelled, and their Unlocks are called), then the Locker
// closes, releasing the locks MinHold still holds. Use it instead of
// Module, not beside it: both provide the gocron.Scheduler.
var LockerModule = fx.Module("fxgocron-locker", fx.Provide(NewLockerFromParams))

// LockerParams are NewLockerFromParams's dependencies.
type LockerParams struct {
	fx.In

	Lifecycle        fx.Lifecycle
	Locker           *lock.Locker
	Options          LockerOptions            `optional:"true"`
	SchedulerOptions []gocron.SchedulerOption `optional:"true"`
}

// LockerResult is what NewLockerFromParams provides.
type LockerResult struct {
	fx.Out

	Locker    *Locker
	Scheduler gocron.Scheduler
}

// NewLockerFromParams builds a Locker (NewLocker) and a scheduler with
// gocron.WithDistributedLocker of it plus p.SchedulerOptions, and ties both
// to the fx lifecycle: the scheduler starts on start; on stop
// ShutdownWithContext (which cancels the jobs' contexts and waits for them
// within fx's stop timeout) runs before the Locker's Close.
func NewLockerFromParams(p LockerParams) (LockerResult, error) {
	l, err := NewLocker(p.Locker, p.Options)
	if err != nil {
		return LockerResult{}, err
	}
	all := append([]gocron.SchedulerOption{gocron.WithDistributedLocker(l)}, p.SchedulerOptions...)
	s, err := gocron.NewScheduler(all...)
	if err != nil {
		return LockerResult{}, fmt.Errorf("fxgocron: new scheduler: %w", err)
	}
	// Hooks stop in reverse order: the scheduler's, then the Locker's.
	p.Lifecycle.Append(fx.Hook{OnStop: l.Close})
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error { s.Start(); return nil },
		OnStop: func(ctx context.Context) error {
			if err := s.ShutdownWithContext(ctx); err != nil {
				return fmt.Errorf("fxgocron: shut down scheduler: %w", err)
			}
			return nil
		},
	})
	return LockerResult{Locker: l, Scheduler: s}, nil
}
