package lock

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// The fx plumbing: everything fx-specific of package lock is here.

// Module provides a *Locker on the graph's fxelection.Backend, with the
// graph's Options if there are any (fx.Supply(lock.Options{…}); else the
// zero Options, every field its default). When the graph has an
// *fxelection.Group, the Locker joins it (NewInGroup: its renewals share
// the group's batches; the group's backend must be the graph's Backend);
// when it has an Observer and Options.Observer is nil, the Locker reports
// to it. The Locker is always built, so invalid Options make the app fail
// to start with the field-naming error; on the app's stop it is closed
// (Hook), releasing the locks still held. For several Lockers in one app
// use Named.
//
//	fx.New(
//		memory.Module, // or any backend module
//		lock.Module,
//		fx.Invoke(func(lc fx.Lifecycle, l *lock.Locker) {
//			lc.Append(fx.StartHook(func() { go nightly(l) })) // Acquire, work, Release
//		}),
//	)
//
// The Locker's hook is appended when it is built, which is after the
// Backend it depends on and that Backend's client are built: fx stops in
// reverse, so held locks are released before a client closed by the hook
// of its constructor (the usual way) is closed.
var Module = fx.Module("fxelection.lock",
	fx.Provide(NewFromParams),
	fx.Invoke(func(*Locker) {}),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Backend   fxelection.Backend
	// Options configures the Locker. Default: the zero Options.
	Options Options `optional:"true"`
	// Group, when present, is the group the Locker joins (NewInGroup).
	Group *fxelection.Group `optional:"true"`
	// Observer, when present, is the Locker's Observer unless
	// Options.Observer is set.
	Observer Observer `optional:"true"`
}

// Result is what NewFromParams provides.
type Result struct {
	fx.Out

	Locker *Locker
}

// NewFromParams builds the Locker for Module and ties it to the app's
// lifecycle (Hook).
func NewFromParams(p Params) (Result, error) {
	l, err := newHooked(p.Lifecycle, p.Backend, p.Group, p.Observer, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Locker: l}, nil
}

// Named returns an option providing a *Locker with opts, tagged
// `name:"<name>"`, for one of several Lockers in one app (each with its
// own identity or timing), as Module provides one: on the graph's Backend,
// in its *fxelection.Group and reporting to its Observer if it has them,
// always built, closed on the app's stop.
//
//	fx.New(memory.Module,
//		lock.Named("reports", lock.Options{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second}),
//		fx.Invoke(fx.Annotate(func(l *lock.Locker) {…}, fx.ParamTags(`name:"reports"`))))
func Named(name string, opts Options) fx.Option {
	tag := `name:"` + name + `"`
	return fx.Options(
		fx.Provide(fx.Annotate(
			func(lc fx.Lifecycle, b fxelection.Backend, g *fxelection.Group, o Observer) (*Locker, error) {
				return newHooked(lc, b, g, o, opts)
			},
			fx.ParamTags(``, ``, `optional:"true"`, `optional:"true"`),
			fx.ResultTags(tag),
		)),
		fx.Invoke(fx.Annotate(func(*Locker) {}, fx.ParamTags(tag))),
	)
}

// newHooked builds a Locker on b (in g when g is not nil), reporting to o
// unless opts has an Observer, and ties it to lc.
func newHooked(lc fx.Lifecycle, b fxelection.Backend, g *fxelection.Group, o Observer, opts Options) (*Locker, error) {
	if opts.Observer == nil {
		opts.Observer = o
	}
	var (
		l   *Locker
		err error
	)
	if g != nil {
		l, err = NewInGroup(g, opts)
	} else {
		l, err = New(b, opts)
	}
	if err != nil {
		return nil, err
	}
	l.Hook(lc)
	return l, nil
}

// Hook ties l to an fx app: on the app's stop, Close, so that the locks
// still held are released (their Contexts end, waiters in Acquire return
// ErrClosed) before the hooks appended earlier run, such as those that
// close the backend's client. The hook returns by the stop context's
// deadline even when the backend ignores its context: it then returns the
// context's error, the release goes on in the background, and a lock it
// cannot release expires after LeaseDuration. It does nothing on start.
// Module, Named and configuration documents call it; call it once for a
// Locker provided to fx otherwise.
func (l *Locker) Hook(lc fx.Lifecycle) {
	lc.Append(fx.StopHook(l.closeBounded))
}

// closeBounded is Close, returning by ctx's end whatever the backend does.
func (l *Locker) closeBounded(ctx context.Context) error {
	done := make(chan error, 1) // buffered: a late Close never blocks
	go func() { done <- l.Close(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("lock: close: %w", ctx.Err())
	}
}
