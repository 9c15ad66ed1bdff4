package config

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// ErrRuntimeClosed is returned by Apply after Close.
var ErrRuntimeClosed = errors.New("config: runtime closed")

// ErrExtensionsUnsupported is the error (at each "extensions[i]") for a
// document with extensions given to a Runtime: extensions are fx options,
// and a Runtime runs no fx app. Build runs them.
var ErrExtensionsUnsupported = errors.New("extensions add fx options; a Runtime runs none (use Build)")

// RuntimeOptions configure a Runtime. The zero value is usable.
type RuntimeOptions struct {
	// Logger is given to every elector (Config.Logger), every pool
	// (pool.Config.Logger) and to backend modules (Context.Logger).
	// Default: the core's default logger for electors, none for pools, a
	// discarding one for modules.
	Logger *slog.Logger

	// Attach, if set, is called with each elector the runtime builds, after
	// its construction and before anything running changes or any new
	// elector starts, so an observer added there misses no event (log
	// lines, metrics, leader work). It may refuse an elector: its error (at
	// the election's path) fails Apply, and nothing running changes (the
	// electors attached so far are detached). The function it returns (nil
	// for none) is called once, after the elector has stopped (its lease
	// released), when an Apply removes or replaces it or Close stops it, or
	// when the Apply that attached it fails. Both run with the runtime's
	// lock held: they must not call the runtime. It is not called with a
	// pool's shard electors (reach them through Pool and
	// pool.Pool.Elector).
	Attach func(e *fxelection.Elector) (detach func(), err error)

	// LockObserver, if set, is every locker's lock.Options.Observer.
	LockObserver lock.Observer
}

// Runtime runs the elections of a Document without an fx app, and replaces
// the running Document by another with Apply, keeping what did not change:
//
//   - an election whose settings (everything but its backend) and backend
//     module are unchanged keeps running untouched: the same *Elector, no
//     hand-over, the same term;
//   - an election no longer in the document stops and releases its lease;
//   - a new election starts;
//   - a changed election stops (releasing its lease) before its
//     replacement starts, so the replacement can take the lease at once.
//
// Pools are handled alike: a pool whose settings and backend module are
// unchanged keeps running (the same *pool.Pool, its shards untouched); a
// removed or changed one stops (releasing its shards and member slot)
// before any new one starts. So are lockers: an unchanged one is the same
// *lock.Locker, its locks untouched; a removed or changed one is closed
// (lock.Locker.Close: the locks it holds are released, their Contexts
// end, and its Acquire calls return lock.ErrClosed), and Runtime.Locker
// returns the new one.
//
// Elections are matched by fx name (Election.FxName, default the name),
// pools and lockers by name. Backend modules are matched by place: a
// "backends" entry by its name, an inline module by the fx name of its
// election or the name of its pool or locker. A module is kept, with its
// provisioned client, when its ID and settings are unchanged: settings are
// compared after placeholder expansion, secrets included (a secret read
// from {file.PATH} that changed means the settings changed), through a
// SHA-256 digest, so the runtime keeps no copy of them. A module whose
// settings changed is provisioned anew, and every election on it restarts.
//
// Its zero value is not usable; call NewRuntime. Its methods are safe for
// concurrent use: Apply and Close run one at a time.
type Runtime struct {
	opts RuntimeOptions

	mu        sync.Mutex // serialises Apply and Close, guards what follows
	closed    bool
	doc       *Document
	modules   map[string]*runModule
	elections []*runElection // in the running document's order
	pools     []*runPool     // in the running document's order
	lockers   []*runLocker   // in the running document's order

	// view is the running electors, in the document's order, for readers
	// that must not wait for an Apply (health handlers, /leader).
	view  sync.Mutex
	list  []*fxelection.Elector
	plist []*runPool
	llist []*runLocker
}

// runModule is one provisioned backend module of a Runtime.
type runModule struct {
	key string   // "backends.<name>" or "election <fx name>"
	sum [32]byte // digest of its ID and settings, secrets included
	p   *provisioned
}

// runElection is one running election of a Runtime.
type runElection struct {
	fxName string
	path   string   // its JSON path in the document that started it
	sum    [32]byte // digest of the election's settings but its backend
	mod    *runModule
	e      *fxelection.Elector
	detach func()
}

// runPool is one running pool of a Runtime.
type runPool struct {
	name string
	sum  [32]byte // digest of the pool's settings but its backend
	mod  *runModule
	p    *pool.Pool
}

// runLocker is one locker of a Runtime.
type runLocker struct {
	name string
	sum  [32]byte // digest of the locker's settings but its backend
	mod  *runModule
	l    *lock.Locker
}

// NewRuntime returns a Runtime running nothing; Apply gives it a document.
func NewRuntime(opts RuntimeOptions) *Runtime {
	return &Runtime{opts: opts, modules: map[string]*runModule{}}
}

// ValidateForRuntime checks doc as Apply does before changing anything:
// Document.Validate's problems and one for each extension
// (ErrExtensionsUnsupported), each a *PathError, joined with errors.Join,
// with no setting's value in them. It does no I/O.
func ValidateForRuntime(doc *Document) error {
	secrets := docSecrets(doc)
	err := doc.Validate()
	for i := range doc.Extensions {
		err = errors.Join(err, pathErr("extensions["+strconv.Itoa(i)+"]", ErrExtensionsUnsupported))
	}
	return redact(err, secrets)
}

// docSecrets are the values to withhold from doc's errors: placeholder
// values and every Secret in it.
func docSecrets(doc *Document) []string {
	return redactable(append(values(doc.secrets), collectSecrets(doc)...))
}

// Apply makes doc the running document. It first validates doc
// (ValidateForRuntime) and provisions the backend modules that are new or
// changed; if either fails, nothing running changes, the modules it
// provisioned are cleaned up, and the error says why (a *PathError per
// problem). Then it stops the elections and pools that are removed or
// changed and closes such lockers (at once, each election within its
// StopTimeout and ctx, each pool and locker within ctx), cleans up the
// modules no longer used, and starts the elections and pools that are new
// or changed (a new locker needs no start). ctx bounds provisioning and
// stopping; electors and pools keep running after it ends.
//
// After the validation and provisioning, Apply always completes; an error
// from then on (a lease that could not be released, a module whose
// Cleanup failed) is returned, and the document is running all the same.
// Apply keeps doc: do not change it afterwards.
func (r *Runtime) Apply(ctx context.Context, doc *Document) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRuntimeClosed
	}
	if err := ValidateForRuntime(doc); err != nil {
		return err
	}
	secrets := docSecrets(doc)
	modules, fresh, err := r.planModules(doc, secrets)
	if err != nil {
		return redact(err, secrets)
	}
	elections, started, err := r.planElections(doc, modules)
	if err != nil {
		return redact(err, secrets)
	}
	pools, startedPools, err := r.planPools(doc, modules)
	if err != nil {
		return redact(err, secrets)
	}
	lockers, err := r.planLockers(doc, modules)
	if err != nil {
		return redact(err, secrets)
	}
	for i, m := range fresh {
		if err := m.p.start(ctx); err != nil {
			for _, prev := range fresh[:i] {
				err = errors.Join(err, prev.p.stop(ctx))
			}
			return err
		}
	}
	if err := r.attachAll(started); err != nil {
		for _, m := range fresh {
			err = errors.Join(err, m.p.stop(ctx))
		}
		return redact(err, secrets)
	}
	kept := map[*runElection]bool{}
	for _, e := range elections {
		kept[e] = true
	}
	var gone []*runElection
	for _, e := range r.elections {
		if !kept[e] {
			gone = append(gone, e)
		}
	}
	keptPools := map[*runPool]bool{}
	for _, p := range pools {
		keptPools[p] = true
	}
	var gonePools []*runPool
	for _, p := range r.pools {
		if !keptPools[p] {
			gonePools = append(gonePools, p)
		}
	}
	keptLockers := map[*runLocker]bool{}
	for _, l := range lockers {
		keptLockers[l] = true
	}
	var goneLockers []*runLocker
	for _, l := range r.lockers {
		if !keptLockers[l] {
			goneLockers = append(goneLockers, l)
		}
	}
	err = errors.Join(stopElections(ctx, gone), stopPools(ctx, gonePools), closeLockers(ctx, goneLockers))
	for key, m := range r.modules {
		if modules[key] != m {
			err = errors.Join(err, m.p.stop(ctx))
		}
	}
	for _, e := range started {
		// Start only checks its context: the campaign runs until Stop.
		err = errors.Join(err, e.e.Start(context.WithoutCancel(ctx)))
	}
	for _, p := range startedPools {
		// Start does no I/O: the pool's loop runs until Stop.
		if serr := p.p.Start(context.WithoutCancel(ctx)); serr != nil {
			err = errors.Join(err, fmt.Errorf("start pool %q: %w", p.name, serr))
		}
	}
	r.doc, r.modules, r.elections, r.pools, r.lockers = doc, modules, elections, pools, lockers
	r.publish()
	return err
}

// planModules returns the modules doc uses by key (the running ones whose
// settings did not change, new ones for the rest) and the new ones.
func (r *Runtime) planModules(doc *Document, secrets []string) (map[string]*runModule, []*runModule, error) {
	out := map[string]*runModule{}
	var fresh []*runModule
	add := func(key, path string, m modkit.BackendModule) error {
		sum, err := moduleSum(m)
		if err != nil {
			return pathErr(path, err)
		}
		if old := r.modules[key]; old != nil && old.sum == sum {
			out[key] = old
			return nil
		}
		nm := &runModule{key: key, sum: sum, p: newProvisioned(path, m, secrets)}
		nm.p.log = r.modLogger()
		out[key] = nm
		fresh = append(fresh, nm)
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Backends)) {
		if err := add("backends."+name, joinPath("backends", name), doc.Backends[name].Module); err != nil {
			return nil, nil, err
		}
	}
	for i, e := range doc.Elections {
		if e.Backend.Module != nil {
			if err := add("election "+e.fxName(), "elections["+strconv.Itoa(i)+"].backend", e.Backend.Module); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, p := range doc.Pools {
		if p.Backend.Module != nil {
			if err := add("pool "+p.Name, "pools["+strconv.Itoa(i)+"].backend", p.Backend.Module); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, l := range doc.Lockers {
		if l.Backend.Module != nil {
			if err := add("locker "+l.Name, "lockers["+strconv.Itoa(i)+"].backend", l.Backend.Module); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, fresh, nil
}

// planLockers returns doc's lockers in order: the running ones that stay,
// and new ones (made; a Locker needs no start) for the rest.
func (r *Runtime) planLockers(doc *Document, modules map[string]*runModule) ([]*runLocker, error) {
	running := map[string]*runLocker{}
	for _, l := range r.lockers {
		running[l.name] = l
	}
	var all []*runLocker
	for i, l := range doc.Lockers {
		mod := modules["backends."+l.Backend.Use]
		if l.Backend.Module != nil {
			mod = modules["locker "+l.Name]
		}
		path := "lockers[" + strconv.Itoa(i) + "]"
		sum, err := lockerSum(l)
		if err != nil {
			return nil, pathErr(path, err)
		}
		if old := running[l.Name]; old != nil && old.sum == sum && old.mod == mod {
			all = append(all, old)
			continue
		}
		lk, err := newLocker(l, mod.p, r.opts.LockObserver)
		if err != nil {
			return nil, pathErr(path, err)
		}
		all = append(all, &runLocker{name: l.Name, sum: sum, mod: mod, l: lk})
	}
	return all, nil
}

// planPools returns doc's pools in order, the running ones that stay and
// new ones (made, not started) for the rest, and the new ones.
func (r *Runtime) planPools(doc *Document, modules map[string]*runModule) (all, started []*runPool, err error) {
	running := map[string]*runPool{}
	for _, p := range r.pools {
		running[p.name] = p
	}
	for i, p := range doc.Pools {
		mod := modules["backends."+p.Backend.Use]
		if p.Backend.Module != nil {
			mod = modules["pool "+p.Name]
		}
		path := "pools[" + strconv.Itoa(i) + "]"
		sum, err := poolSum(p)
		if err != nil {
			return nil, nil, pathErr(path, err)
		}
		if old := running[p.Name]; old != nil && old.sum == sum && old.mod == mod {
			all = append(all, old)
			continue
		}
		pl, err := newPool(p, mod.p, r.opts.Logger)
		if err != nil {
			return nil, nil, pathErr(path, err)
		}
		np := &runPool{name: p.Name, sum: sum, mod: mod, p: pl}
		all, started = append(all, np), append(started, np)
	}
	return all, started, nil
}

// planElections returns doc's elections in order, the running ones that
// stay and new ones (built, not started) for the rest, and the new ones.
func (r *Runtime) planElections(doc *Document, modules map[string]*runModule) (all, started []*runElection, err error) {
	running := map[string]*runElection{}
	for _, e := range r.elections {
		running[e.fxName] = e
	}
	for i, e := range doc.Elections {
		mod := modules["backends."+e.Backend.Use]
		if e.Backend.Module != nil {
			mod = modules["election "+e.fxName()]
		}
		sum, err := electionSum(e)
		if err != nil {
			return nil, nil, pathErr("elections["+strconv.Itoa(i)+"]", err)
		}
		if old := running[e.fxName()]; old != nil && old.sum == sum && old.mod == mod {
			all = append(all, old)
			continue
		}
		c := e.ElectorConfig()
		c.Logger = r.opts.Logger
		el, err := mod.p.group.New(c)
		if err != nil {
			return nil, nil, pathErr("elections["+strconv.Itoa(i)+"]", err)
		}
		ne := &runElection{fxName: e.fxName(), path: "elections[" + strconv.Itoa(i) + "]", sum: sum, mod: mod, e: el}
		all, started = append(all, ne), append(started, ne)
	}
	return all, started, nil
}

// attachAll calls Attach with every elector of es, setting its detach; if
// Attach refuses one, it detaches those attached and returns the error at
// that election's path.
func (r *Runtime) attachAll(es []*runElection) error {
	for i, e := range es {
		e.detach = func() {}
		if r.opts.Attach == nil {
			continue
		}
		detach, err := r.opts.Attach(e.e)
		if err != nil {
			for _, prev := range es[:i] {
				prev.detach()
			}
			return pathErr(e.path, err)
		}
		if detach != nil {
			e.detach = detach
		}
	}
	return nil
}

func (r *Runtime) modLogger() *slog.Logger {
	if r.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.opts.Logger
}

// stopElections stops es at once, each releasing its lease within its
// StopTimeout and ctx, then runs their detach functions; it returns the
// stop errors joined.
func stopElections(ctx context.Context, es []*runElection) error {
	errs := make([]error, len(es))
	var wg sync.WaitGroup
	for i, e := range es {
		wg.Go(func() {
			if err := e.e.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop election %q: %w", e.fxName, err)
			}
		})
	}
	wg.Wait()
	for _, e := range es {
		e.detach()
	}
	return errors.Join(errs...)
}

// stopPools stops ps at once, each releasing its shards and member slot
// within ctx, and returns the stop errors joined.
func stopPools(ctx context.Context, ps []*runPool) error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			if err := p.p.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop pool %q: %w", p.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeLockers closes ls at once, each releasing its locks within ctx,
// and returns the errors joined.
func closeLockers(ctx context.Context, ls []*runLocker) error {
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			if err := closeLocker(ctx, l.l); err != nil {
				errs[i] = fmt.Errorf("close locker %q: %w", l.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// publish copies the running electors, pools and lockers to the view.
func (r *Runtime) publish() {
	list := make([]*fxelection.Elector, len(r.elections))
	for i, e := range r.elections {
		list[i] = e.e
	}
	r.view.Lock()
	r.list, r.plist, r.llist = list, slices.Clone(r.pools), slices.Clone(r.lockers)
	r.view.Unlock()
}

// Locker returns the running locker named name, or nil if the running
// document has none by that name. Lockers are looked up apart from
// elections and pools: a locker may share a name with either. Like
// Electors, it does not wait for an Apply in progress; a Locker that an
// Apply removed or changed is closed (its Acquire calls return
// lock.ErrClosed): look it up again.
func (r *Runtime) Locker(name string) *lock.Locker {
	r.view.Lock()
	defer r.view.Unlock()
	for _, l := range r.llist {
		if l.name == name {
			return l.l
		}
	}
	return nil
}

// Lockers returns the running lockers in the running document's order (a
// new slice). Like Electors, it does not wait for an Apply in progress.
func (r *Runtime) Lockers() []*lock.Locker {
	r.view.Lock()
	defer r.view.Unlock()
	out := make([]*lock.Locker, len(r.llist))
	for i, l := range r.llist {
		out[i] = l.l
	}
	return out
}

// Pool returns the running pool named name, or nil if the running
// document has none by that name. Pools are looked up apart from
// elections: a pool and an election may share a name. Like Electors, it
// does not wait for an Apply in progress.
func (r *Runtime) Pool(name string) *pool.Pool {
	r.view.Lock()
	defer r.view.Unlock()
	for _, p := range r.plist {
		if p.name == name {
			return p.p
		}
	}
	return nil
}

// Pools returns the running pools in the running document's order (a new
// slice). Like Electors, it does not wait for an Apply in progress.
func (r *Runtime) Pools() []*pool.Pool {
	r.view.Lock()
	defer r.view.Unlock()
	out := make([]*pool.Pool, len(r.plist))
	for i, p := range r.plist {
		out[i] = p.p
	}
	return out
}

// Electors returns the running electors in the running document's order
// (a new slice). It does not wait for an Apply in progress: it sees the
// electors of the last completed one.
func (r *Runtime) Electors() []*fxelection.Elector {
	r.view.Lock()
	defer r.view.Unlock()
	return slices.Clone(r.list)
}

// Document returns the running document (nil before the first Apply and
// after Close). It waits for an Apply in progress. Do not change it.
func (r *Runtime) Document() *Document {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.doc
}

// Close stops every election and pool and closes every locker (at once,
// each election releasing its lease within its StopTimeout and ctx, each
// pool its shards and member slot within ctx, each locker its locks within
// ctx), then cleans up every backend module. Afterwards Apply returns
// ErrRuntimeClosed; Close again does nothing.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	err := errors.Join(stopElections(ctx, r.elections), stopPools(ctx, r.pools), closeLockers(ctx, r.lockers))
	for _, key := range slices.Sorted(maps.Keys(r.modules)) {
		err = errors.Join(err, r.modules[key].p.stop(ctx))
	}
	r.doc, r.modules, r.elections, r.pools, r.lockers = nil, nil, nil, nil, nil
	r.publish()
	return err
}

// moduleSum digests m's ID and settings: its JSON (Secrets come out
// masked) followed by every Secret's value, in field order.
func moduleSum(m modkit.Module) ([32]byte, error) {
	raw, err := modkit.MarshalModule(m)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	writeField(h, raw)
	for _, s := range collectSecrets(m) {
		writeField(h, []byte(s))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// electionSum digests e's settings but its backend.
func electionSum(e Election) ([32]byte, error) {
	e.Backend = modkit.BackendRef{}
	raw, err := json.Marshal(e)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(raw), nil
}

// poolSum digests p's settings but its backend.
func poolSum(p Pool) ([32]byte, error) {
	p.Backend = modkit.BackendRef{}
	raw, err := json.Marshal(p)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(raw), nil
}

// lockerSum digests l's settings but its backend.
func lockerSum(l Locker) ([32]byte, error) {
	l.Backend = modkit.BackendRef{}
	raw, err := json.Marshal(l)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(raw), nil
}

// writeField writes b with its length first, so fields cannot run into
// one another.
func writeField(h interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	_, _ = h.Write(n[:])
	_, _ = h.Write(b)
}

// RedactedJSON returns doc as JSON for display (an admin endpoint's GET
// /config): every Secret setting comes out as "xxxxx", and every value
// that replaced an {env.NAME} or {file.PATH} placeholder (at least 4 bytes
// long) is masked wherever it appears; of a connection string (a URL, or
// key=value pairs with a password) only the secret parts are, not its
// scheme or names, which module IDs share. Module settings come out as their
// decoded values (defaults a module filled in are not shown; placeholders
// are not restored).
func (doc *Document) RedactedJSON() ([]byte, error) {
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	s := string(raw)
	return []byte(newMasker(s, docSecrets(doc)).text(s)), nil
}
