package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// errTwoApps is returned when Build's options are used in a second app: the
// decoded modules hold one app's provisioned state.
var errTwoApps = errors.New("config: options from one Load or Build used in two fx apps; call Load or Build for each app")

// provisioned is one backend module instance in one app: its life-cycle
// hook and the Backend electors use.
type provisioned struct {
	path    string // JSON path of the module, for errors
	module  modkit.BackendModule
	secrets []string     // redacted from the module's errors
	proxy   *lazyBackend // what electors are built with
	// group holds every elector on proxy: they renew in batches when the
	// module's store can, and share start workers.
	group *fxelection.Group

	mu    sync.Mutex
	lc    fx.Lifecycle // the app it is attached to
	log   *slog.Logger
	scope *scope // nested modules provisioned by this one
}

// newProvisioned returns the provisioned instance of m at path (for
// errors), with the secrets to withhold from its errors, its lazy Backend
// and the fxelection.Group of its electors.
func newProvisioned(path string, m modkit.BackendModule, secrets []string) *provisioned {
	proxy := &lazyBackend{kind: m.ElectionModule().ID.Name()}
	group, _ := fxelection.NewGroup(proxy) // errs only on a nil Backend
	return &provisioned{path: path, module: m, secrets: secrets, proxy: proxy, group: group}
}

// attach appends p's hook to lc the first time an elector using p is built,
// so it comes before (starts before, stops after) every such elector's hook.
func (p *provisioned) attach(lc fx.Lifecycle, log *slog.Logger) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := reflect.TypeOf(lc); t == nil || !t.Comparable() {
		return fmt.Errorf("config: fx.Lifecycle of type %T cannot be told apart from another app's", lc)
	}
	switch {
	case p.lc == lc:
		return nil
	case p.lc != nil:
		return errTwoApps
	}
	p.lc, p.log = lc, log
	lc.Append(fx.Hook{OnStart: p.start, OnStop: p.stop})
	return nil
}

// start provisions the module and hands its Backend to the electors. On
// failure it cleans the module up before returning.
func (p *provisioned) start(ctx context.Context) error {
	p.scope = &scope{secrets: p.secrets}
	if prov, ok := p.module.(modkit.Provisioner); ok {
		p.scope.context = modkit.NewContext(ctx, p.log, p.scope.provisionBackend)
		if err := p.call("provision", func() error { return prov.Provision(p.scope.context) }); err != nil {
			return errors.Join(err, p.cleanup(ctx))
		}
	}
	var b fxelection.Backend
	err := p.call("backend", func() error {
		var err error
		b, err = p.module.Backend()
		if err == nil && b == nil {
			err = errors.New("nil Backend")
		}
		return err
	})
	if err != nil {
		return errors.Join(err, p.cleanup(ctx))
	}
	p.proxy.set(b)
	return nil
}

// stop runs after every elector using the module has stopped. ctx is fx's
// OnStop context: its deadline reaches the module's CleanupContext.
func (p *provisioned) stop(ctx context.Context) error {
	p.proxy.set(nil)
	return p.cleanup(ctx)
}

// cleanup cleans up the module, then the modules it provisioned, with the
// hook's context ctx.
func (p *provisioned) cleanup(ctx context.Context) error {
	var err error
	if fn := cleanupFunc(p.module, ctx); fn != nil {
		err = p.call("cleanup", fn)
	}
	if p.scope != nil {
		if nerr := p.scope.cleanup(ctx); nerr != nil {
			err = errors.Join(err, pathErr(p.path, nerr))
		}
	}
	return err
}

// cleanupFunc returns m's clean-up with ctx: CleanupContext when m is a
// ContextCleanerUpper (Cleanup is then never called), else Cleanup, else nil.
func cleanupFunc(m modkit.Module, ctx context.Context) func() error {
	if c, ok := m.(modkit.ContextCleanerUpper); ok {
		return func() error { return c.CleanupContext(ctx) }
	}
	if c, ok := m.(modkit.CleanerUpper); ok {
		return c.Cleanup
	}
	return nil
}

// call runs one module method, turning a panic into an error and naming the
// module and its path in a redacted error.
func (p *provisioned) call(op string, fn func() error) error {
	if err := safeCall(fn); err != nil {
		return pathErr(p.path, fmt.Errorf("%s %s: %w", p.module.ElectionModule().ID, op, redact(err, p.secrets)))
	}
	return nil
}

// lazyBackend is the Backend electors are built with (at fx construction,
// before anything is provisioned); it forwards to the module's Backend once
// the module's start hook has provisioned it. Before that, and after the
// module stopped, every operation returns ErrNotProvisioned.
//
// It implements every optional capability the core looks for, because an
// elector looks for them on the value it was built with, before the module
// has a Backend: backendkit.NamedBackend (the module's name),
// backendkit.Notifier (forwarded when the provisioned backend is one) and
// backendkit.BatchRenewer (see RenewBatch). One lazyBackend per provisioned
// module, shared by every election using the module, so those elections
// share one renewal batcher as coded elections sharing a backend value do.
type lazyBackend struct {
	kind string // the module ID's last label: "memory", "redis", …
	cur  atomic.Pointer[fxelection.Backend]
}

var (
	_ fxelection.Backend            = (*lazyBackend)(nil)
	_ backendkit.Notifier           = (*lazyBackend)(nil)
	_ backendkit.NamedBackend       = (*lazyBackend)(nil)
	_ backendkit.BatchRenewer       = (*lazyBackend)(nil)
	_ backendkit.BatchProber        = (*lazyBackend)(nil)
	_ backendkit.BatchAcquirer      = (*lazyBackend)(nil)
	_ backendkit.AcquireBatchProber = (*lazyBackend)(nil)
)

func (l *lazyBackend) set(b fxelection.Backend) {
	if b == nil {
		l.cur.Store(nil)
		return
	}
	l.cur.Store(&b)
}

func (l *lazyBackend) get() (fxelection.Backend, error) {
	if b := l.cur.Load(); b != nil {
		return *b, nil
	}
	return nil, ErrNotProvisioned
}

// BackendName returns the module's name ("memory" for
// fxelection.backends.memory): electors learn it before provisioning.
func (l *lazyBackend) BackendName() string { return l.kind }

// Acquire implements fxelection.Backend.
func (l *lazyBackend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	b, err := l.get()
	if err != nil {
		return fxelection.Lease{}, err
	}
	return b.Acquire(ctx, req)
}

// Renew implements fxelection.Backend.
func (l *lazyBackend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	b, err := l.get()
	if err != nil {
		return fxelection.Lease{}, err
	}
	return b.Renew(ctx, lease)
}

// CanRenewBatch implements backendkit.BatchProber: an elector started
// after its module was provisioned (fx starts modules first) batches
// exactly when the provisioned backend implements BatchRenewer, and
// otherwise renews with Renew as a coded elector on that backend would.
func (l *lazyBackend) CanRenewBatch() bool {
	b, err := l.get()
	if err != nil {
		return false
	}
	_, ok := b.(backendkit.BatchRenewer)
	return ok
}

// RenewBatch implements backendkit.BatchRenewer. When the provisioned
// backend implements BatchRenewer, the whole batch goes to its RenewBatch
// (one round trip where the store allows). Otherwise each lease is renewed
// with the backend's Renew, all at once, each on a goroutine of its own, so
// that every lease gets exactly the outcome Renew gives it and a slow
// renewal delays no other lease's result beyond ctx: when ctx ends first,
// the renewals still running get ctx's error, and their goroutines end when
// the backend's Renew returns (a backend ignoring its context keeps them
// until then, as it would keep an elector's own call). Before provisioning
// and after the module stopped, every lease gets ErrNotProvisioned.
//
// Electors started after provisioning do not call it on such a backend
// (CanRenewBatch); the fallback is for one started before. What it costs
// an election on a backend that cannot batch: its
// renewals follow the batching grid of Config.RetryPeriod (up to
// RetryPeriod/64 early, never late) and share a sender with the other
// elections of the module; its renew deadline bounds every renewal as
// before, since the elector stops waiting at its own deadline.
func (l *lazyBackend) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	out := make([]backendkit.RenewResult, len(leases))
	b, err := l.get()
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	if br, ok := b.(backendkit.BatchRenewer); ok {
		return br.RenewBatch(ctx, leases)
	}
	return renewEach(ctx, b, leases)
}

// CanAcquireBatch implements backendkit.AcquireBatchProber: electors
// acquire in batches exactly when the provisioned backend implements
// backendkit.BatchAcquirer.
func (l *lazyBackend) CanAcquireBatch() bool {
	b, err := l.get()
	if err != nil {
		return false
	}
	_, ok := b.(backendkit.BatchAcquirer)
	return ok
}

// AcquireBatch implements backendkit.BatchAcquirer: the whole batch goes
// to the provisioned backend's AcquireBatch, or, on a backend without one
// (for an elector started before provisioning; see CanAcquireBatch), to
// its Acquire one request after another, in order. Before provisioning
// and after the module stopped, every request gets ErrNotProvisioned.
func (l *lazyBackend) AcquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	out := make([]backendkit.AcquireResult, len(reqs))
	b, err := l.get()
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	if ba, ok := b.(backendkit.BatchAcquirer); ok {
		return ba.AcquireBatch(ctx, reqs)
	}
	for i, req := range reqs {
		out[i].Lease, out[i].Err = b.Acquire(ctx, req)
	}
	return out
}

// renewEach renews each lease with b.Renew concurrently and returns their
// results in order, or, once ctx ends, ctx's error for those still running.
// A panic in Renew becomes that lease's error.
func renewEach(ctx context.Context, b fxelection.Backend, leases []fxelection.Lease) []backendkit.RenewResult {
	type result struct {
		i int
		r backendkit.RenewResult
	}
	ch := make(chan result, len(leases)) // buffered: a late renewal never blocks
	for i, lease := range leases {
		go func() {
			r := result{i: i}
			defer func() { ch <- r }()
			defer func() {
				if v := recover(); v != nil {
					r.r = backendkit.RenewResult{Err: errRenewPanicked}
				}
			}()
			r.r.Lease, r.r.Err = b.Renew(ctx, lease)
		}()
	}
	out := make([]backendkit.RenewResult, len(leases))
	got := make([]bool, len(leases))
	for range leases {
		select {
		case r := <-ch:
			out[r.i], got[r.i] = r.r, true
		case <-ctx.Done():
			for i := range out {
				if !got[i] {
					out[i].Err = ctx.Err()
				}
			}
			return out
		}
	}
	return out
}

// errRenewPanicked is a lease's error in RenewBatch when the provisioned
// backend's Renew panicked (the panic value is not quoted: it may hold
// anything the backend had).
var errRenewPanicked = errors.New("config: renew lease: backend Renew panicked")

// Release implements fxelection.Backend.
func (l *lazyBackend) Release(ctx context.Context, lease fxelection.Lease) error {
	b, err := l.get()
	if err != nil {
		return err
	}
	return b.Release(ctx, lease)
}

// Transfer implements backendkit.Transferer by forwarding, or returns an
// error matching errors.ErrUnsupported, having changed nothing, when the
// backend behind it cannot transfer.
func (l *lazyBackend) Transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	b, err := l.get()
	if err != nil {
		return fxelection.Lease{}, err
	}
	return backendkit.Transfer(ctx, b, lease, req)
}

// Get implements fxelection.Backend.
func (l *lazyBackend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	b, err := l.get()
	if err != nil {
		return fxelection.Lease{}, err
	}
	return b.Get(ctx, election)
}

// Subscribe implements backendkit.Notifier by forwarding to the provisioned
// backend when it is a Notifier; otherwise wake is never called (the
// elector keeps polling, as with any backend without push wake-up).
func (l *lazyBackend) Subscribe(election string, wake func()) (cancel func()) {
	b, err := l.get()
	if err != nil {
		return func() {}
	}
	if n, ok := b.(backendkit.Notifier); ok {
		return n.Subscribe(election, wake)
	}
	return func() {}
}
