package cachelease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// acquireAttempts is how many read-decide-write rounds Acquire makes when
// its conditional writes keep losing races.
const acquireAttempts = 4

const (
	// watchMinBackoff and watchMaxBackoff bound the wait between attempts to
	// re-establish a broken watch.
	watchMinBackoff = 50 * time.Millisecond
	watchMaxBackoff = 2 * time.Second
)

// Backend implements fxelection.Backend (and backendkit.Notifier and
// backendkit.Transferer) on any Store; see the package documentation. It
// is safe for concurrent use. Each Backend has its own expiry tracker: on
// a store without server TTL, the observations that allow a takeover
// belong to the candidate (process) that made them.
type Backend struct {
	store   Store
	caps    Capabilities
	watcher Watcher // nil: no push wake-up
	prefix  string
	name    string
	secrets []string
	tracker backendkit.ExpiryTracker
	hub     *backendkit.WakeHub
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.Notifier     = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
)

// New returns a Backend on store, which the caller owns. It does no I/O.
func New(store Store, opts Options) (*Backend, error) {
	if store == nil {
		return nil, errors.New("cachelease: nil store")
	}
	caps := store.Capabilities()
	if err := opts.Validate(caps); err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "cache"
	}
	b := &Backend{
		store:   store,
		caps:    caps,
		prefix:  opts.keyPrefix(),
		name:    name,
		secrets: append([]string(nil), opts.Secrets...),
	}
	if !opts.DisablePush {
		b.watcher, _ = store.(Watcher)
	}
	b.hub = backendkit.NewWakeHub(b.listen)
	return b, nil
}

// BackendName returns Options.Name ("cache" by default).
func (b *Backend) BackendName() string { return b.name }

// Key returns the store key of election's lease, for operators and tests.
func (b *Backend) Key(election string) string { return keyFor(b.prefix, election, b.caps.MaxKeyLen) }

// ServerTTL reports whether the store expires leases by its own clock
// (server-authoritative) rather than by observed time.
func (b *Backend) ServerTTL() bool { return b.caps.ServerTTL }

// Close stops push wake-up for good. The Backend stays usable without it.
// It does not close the store.
func (b *Backend) Close() error {
	b.hub.Close()
	return nil
}

// fail returns err with context, redacted.
func (b *Backend) fail(op string, err error) error {
	return backendkit.RedactError(fmt.Errorf("%s: %w", op, err), b.secrets...)
}

// read returns election's value; found is false if there is none.
func (b *Backend) read(ctx context.Context, election string) (s backendkit.Value, found bool, err error) {
	s, found, err = b.readValue(ctx, election)
	if err != nil || !found {
		// No observation spans a gap: a missing key or a failed read
		// starts the watch of the next write afresh.
		b.tracker.Forget(election)
	}
	return s, found, err
}

func (b *Backend) readValue(ctx context.Context, election string) (s backendkit.Value, found bool, err error) {
	e, err := b.store.Get(ctx, b.Key(election))
	if errors.Is(err, ErrNotFound) {
		// A tombstone's version, if the store keeps one (see Store.Get):
		// Acquire creates the key over exactly this tombstone.
		s.Lease.Version = e.Version
		return s, false, nil
	}
	if err != nil {
		return backendkit.Value{}, false, err
	}
	s, err = decode(e.Value, election)
	if err != nil {
		return backendkit.Value{}, true, err
	}
	if e.Version == "" {
		return backendkit.Value{}, true, errors.New("store returned no version")
	}
	s.Lease.Version = e.Version
	return s, true, nil
}

// MinLeaseDuration returns the store's MinTTL on a store with server TTL
// (memcached: one second), else 0 (backendkit.MinDurationer).
func (b *Backend) MinLeaseDuration() time.Duration {
	if !b.caps.ServerTTL {
		return 0
	}
	return b.caps.MinTTL
}

// ttl is the TTL for a live lease of duration d.
func (b *Backend) ttl(d time.Duration) (time.Duration, error) {
	if !b.caps.ServerTTL {
		return 0, nil
	}
	if b.caps.MaxTTL > 0 && d > b.caps.MaxTTL {
		return 0, fmt.Errorf("%w: %v exceeds %v", ErrTTLRange, d, b.caps.MaxTTL)
	}
	return d, nil
}

// Acquire takes req.Election's lease for req.Identity if the key is absent
// (free, expired, evicted or deleted), released, already held by
// req.Identity (same term), or — on a store without server TTL — observed
// unchanged by this Backend for the record's full Duration. A new holder's
// term is backendkit.NextTerm of the last term the store shows, so it is
// clock-seeded and rises even when the value was lost. Every write is an
// add-if-absent or a compare-and-swap on the version just read (a
// tombstone's, on a store that keeps them), and a call makes at most one
// write that succeeds: a write whose version the store
// cannot return (ErrVersionUnknown) ends the call with a store error, since
// the lease it wrote may already be another's.
func (b *Backend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	const op = "acquire lease"
	if req.Election == "" || req.Identity == "" {
		return fxelection.Lease{}, errors.New("acquire lease: empty election or identity")
	}
	ttl, err := b.ttl(req.Duration)
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	for range acquireAttempts {
		cur, found, err := b.read(ctx, req.Election)
		if err != nil {
			return fxelection.Lease{}, b.fail(op, err)
		}
		var expired func() bool
		if !b.caps.ServerTTL {
			expired = func() bool {
				return b.tracker.Expired(req.Election, cur.Lease.Version, cur.Write, cur.Lease.Duration)
			}
		}
		next, err := backendkit.Claim(req, cur, found, expired, time.Now().UTC().Round(0))
		var held *backendkit.HeldError
		if errors.As(err, &held) {
			return fxelection.Lease{}, err
		}
		if err != nil {
			return fxelection.Lease{}, b.fail(op, err)
		}
		next.Metadata = maps.Clone(req.Metadata)
		if err := next.Validate(); err != nil {
			return fxelection.Lease{}, b.fail(op, err)
		}
		value, err := encode(next, false)
		if err != nil {
			return fxelection.Lease{}, b.fail(op, err)
		}
		var version string
		if found || cur.Lease.Version != "" { // a value, or the tombstone read
			version, err = b.store.CompareAndSwap(ctx, b.Key(req.Election), value, cur.Lease.Version, ttl)
		} else {
			version, err = b.store.Add(ctx, b.Key(req.Election), value, ttl)
		}
		if !errors.Is(err, ErrVersionUnknown) && (errors.Is(err, ErrConflict) || errors.Is(err, ErrExists)) {
			continue // someone wrote first, nothing was written: read again
		}
		if err != nil {
			return fxelection.Lease{}, b.fail(op, err)
		}
		b.tracker.Forget(req.Election)
		next.Version = version
		return next, nil
	}
	return fxelection.Lease{}, fmt.Errorf("acquire lease: lost %d compare-and-swap races in a row", acquireAttempts)
}

// own reads lease's value and returns it if it still holds lease: same
// holder, incarnation and term, not released. Otherwise it returns an error
// matching backendkit.ErrLeaseLost (or a store failure).
//
// The version is deliberately not compared: only the holder writes its own
// term, so a value with the caller's holder, incarnation and term is the
// caller's lease even when the caller missed the answer to its last write
// (a renewal whose reply was lost, or cancelled by Stop, changed the
// version). The write that follows is a compare-and-swap on the version
// read here, so nothing written in between is overwritten.
//
// The incarnation is compared: two incarnations of one identity are two
// leaderships, and the holder and term alone cannot always tell them apart
// (clock-seeded terms handed out after the record was lost can coincide).
// Without it, the compare-and-swap on whatever version was read would let
// an old incarnation renew, or release, its successor's lease.
func (b *Backend) own(ctx context.Context, lease fxelection.Lease) (backendkit.Value, error) {
	if lease.Election == "" || lease.Holder == "" || lease.Term == 0 {
		return backendkit.Value{}, backendkit.ErrLeaseLost
	}
	cur, found, err := b.read(ctx, lease.Election)
	switch {
	case errors.Is(err, backendkit.ErrInvalidRecord):
		return backendkit.Value{}, fmt.Errorf("%w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return backendkit.Value{}, err
	case !found || cur.Released || cur.Lease.Holder != lease.Holder || cur.Lease.Term != lease.Term ||
		cur.Lease.Incarnation != lease.Incarnation:
		return backendkit.Value{}, backendkit.ErrLeaseLost
	}
	return cur, nil
}

// Renew rewrites lease's value (same term, a fresh TTL where the store
// expires keys) if the store still holds the caller's holder and term, with
// a compare-and-swap on the version just read; if the lease was taken over,
// released, expired, was evicted or deleted, it returns an error matching
// backendkit.ErrLeaseLost. The returned lease
// carries the new version; a renewal stored whose version the store cannot
// return (ErrVersionUnknown) gives a store error, not ErrLeaseLost.
func (b *Backend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	const op = "renew lease"
	ttl, err := b.ttl(lease.Duration)
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	cur, err := b.own(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	next := cur.Lease.Clone()
	next.Metadata = maps.Clone(lease.Metadata)
	next.Duration = lease.Duration
	return b.replaceOwn(ctx, op, next, cur.Lease.Version, ttl)
}

// replaceOwn writes next over the caller's own value, read at version,
// with one compare-and-swap: a lost compare-and-swap is ErrLeaseLost (the
// value changed since own read it). Renew and Transfer share it.
func (b *Backend) replaceOwn(ctx context.Context, op string, next fxelection.Lease, version string, ttl time.Duration) (fxelection.Lease, error) {
	if err := next.Validate(); err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	value, err := encode(next, false)
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	version, err = b.store.CompareAndSwap(ctx, b.Key(next.Election), value, version, ttl)
	if errors.Is(err, ErrConflict) && !errors.Is(err, ErrVersionUnknown) {
		return fxelection.Lease{}, b.fail(op, backendkit.ErrLeaseLost)
	}
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	next.Version = version
	return next, nil
}

// Release replaces lease's value, if it still holds lease, with a released
// marker that keeps the term and has no TTL (a cache may still evict it;
// terms stay clock-seeded then). Releasing a lease that is no longer the
// caller's returns nil. Watchers of the store see the change (push wake-up).
func (b *Backend) Release(ctx context.Context, lease fxelection.Lease) error {
	const op = "release lease"
	cur, err := b.own(ctx, lease)
	if errors.Is(err, backendkit.ErrLeaseLost) {
		return nil
	}
	if err != nil {
		return b.fail(op, err)
	}
	value, err := encode(cur.Lease, true)
	if err != nil {
		return b.fail(op, err)
	}
	_, err = b.store.CompareAndSwap(ctx, b.Key(lease.Election), value, cur.Lease.Version, 0)
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrVersionUnknown) {
		// ErrVersionUnknown: the marker was stored; the release is done.
		return b.fail(op, err)
	}
	return nil
}

// Transfer implements backendkit.Transferer: it ends lease, matched as
// Release matches it (own: holder, incarnation and term, not released; not
// the version), and in the same write replaces it with the record Acquire
// would write for req on a free lease: held by req.Identity under
// req.Incarnation, with req.Metadata, for req.Duration (the store's TTL as
// Acquire sets it), acquired now, and the term backendkit.Claim gives a
// released value of the lease's term (backendkit.NextTerm of it), so
// strictly above every term the election had. That write is one
// compare-and-swap on the version own read, so the lease is never free in
// between and nothing written since the read is overwritten.
//
// req is checked first (AcquireRequest.Validate, and a duration the store's
// TTL can express). A req for another election than lease's, a lease that
// is no longer the caller's (taken over, released, deleted, expired or
// evicted where the store has TTL, or another incarnation's or term's) and
// a compare-and-swap that loses to a write made since the read (as for
// Renew, even one of the holder's own that landed late) change nothing
// and give an error matching backendkit.ErrLeaseLost. On a store without
// server TTL a lease nobody has taken over is still the caller's, however
// old, as for Release. A lease at backendkit.MaxTerm changes nothing
// either and gives backendkit.ErrTermExhausted. A transfer stored whose
// version the store cannot return (ErrVersionUnknown) gives a store error:
// it happened, but the hint's version is unknown.
//
// Watchers of the store see the new holder's value, which wakes the
// election's subscribers although the lease was never free (see
// Subscribe); on a Store without Watcher followers learn of the new holder
// at their next retry.
func (b *Backend) Transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	const op = "transfer lease"
	if err := backendkit.CheckTransfer(lease, req); err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	ttl, err := b.ttl(req.Duration)
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	cur, err := b.own(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	next, err := backendkit.ClaimTransfer(req, cur, time.Now().UTC().Round(0))
	if err != nil {
		return fxelection.Lease{}, b.fail(op, err)
	}
	next.Metadata = maps.Clone(req.Metadata)
	out, err := b.replaceOwn(ctx, op, next, cur.Lease.Version, ttl)
	if err == nil {
		b.tracker.Forget(lease.Election) // the version changed under our own hand
	}
	return out, err
}

// Get returns election's current holder with Version set to the store's
// version and a zero ExpiresAt, or backendkit.ErrNoLease if the key is
// absent or released. It changes nothing in the store; on a store without
// server TTL it starts this Backend's observation of the version it saw,
// as an Acquire would.
func (b *Backend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	cur, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, b.fail("get lease", err)
	}
	if !found || cur.Released {
		return fxelection.Lease{}, backendkit.ErrNoLease
	}
	if !b.caps.ServerTTL {
		b.tracker.Expired(election, cur.Lease.Version, cur.Write, cur.Lease.Duration)
	}
	return cur.Lease, nil
}

// Subscribe implements backendkit.Notifier. On a Store that implements
// Watcher, wake is called when a lease of election is released, handed to
// another leadership in one write (Transfer, a takeover, another
// incarnation's acquisition) or its key deleted, but not when its holder
// renews it; and (spuriously) for every election each time the watch is
// (re)established, since a release may have been missed while it was down,
// and when the watch sees an election's first write since then, which may
// have been a hand-over. All subscriptions share one watch
// (backendkit.WakeHub). On any other Store, or with Options.DisablePush,
// Subscribe does nothing and followers poll.
func (b *Backend) Subscribe(election string, wake func()) (cancel func()) {
	if b.watcher == nil {
		return func() {}
	}
	return b.hub.Subscribe(election, wake)
}

// listen keeps a watch on the prefix until ctx is done, re-establishing it
// with backoff when it breaks.
func (b *Backend) listen(ctx context.Context, hub *backendkit.WakeHub) {
	failures := 0
	for {
		seen := &watched{} // what this watch saw: a new one knows nothing
		err := b.watcher.Watch(ctx, b.prefix, func() {
			failures = 0
			hub.WakeAll()
		}, func(key string, value []byte) { b.changed(hub, seen, key, value) })
		if ctx.Err() != nil {
			return
		}
		_ = err // the elector keeps polling meanwhile
		failures++
		if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, watchMinBackoff, watchMaxBackoff)) {
			return
		}
	}
}

// leadership is what a renewal of a lease value keeps: its holder,
// incarnation and term, live or released.
type leadership struct {
	holder, incarnation string
	term                uint64
	released            bool
}

// watched is what one watch has seen of the keys under the prefix: the
// leadership of each key's last value (none for a key deleted since). It
// holds at most one small entry per key in the store under the prefix.
type watched struct {
	mu   sync.Mutex
	last map[string]leadership
}

// swap records l as key's last value and returns the one before it; known
// is false when the watch has seen none (or the key was deleted since).
func (w *watched) swap(key string, l leadership) (prev leadership, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = make(map[string]leadership)
	}
	prev, known = w.last[key]
	w.last[key] = l
	return prev, known
}

// forget drops what the watch saw of key.
func (w *watched) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// changed wakes the subscribers of the election whose key changed, if the
// change may have freed the lease or handed it to another candidate: a
// delete, a released marker, or a live value whose leadership (holder,
// incarnation, term) is not that of the live value seen before it — a
// Transfer's new holder, a takeover of an expired lease, another
// incarnation's acquisition — or whose predecessor this watch did not see.
// A renewal (the same leadership) wakes nobody, deliberately: it comes
// every RetryPeriod and frees nothing; nor does a lease taken after a
// release, whose followers the release woke already.
func (b *Backend) changed(hub *backendkit.WakeHub, seen *watched, key string, value []byte) {
	name, ok := strings.CutPrefix(key, b.prefix)
	if !ok {
		return
	}
	if value == nil {
		seen.forget(key)
		if election, ok := unescapeName(name); ok {
			hub.Wake(election)
		} else {
			hub.WakeAll() // a hashed key: the name is not in it
		}
		return
	}
	s, err := decode(value, "")
	if err != nil || b.Key(s.Lease.Election) != key {
		seen.forget(key) // a foreign value: what follows it is a change
		return
	}
	l := leadership{holder: s.Lease.Holder, incarnation: s.Lease.Incarnation, term: s.Lease.Term, released: s.Released}
	prev, known := seen.swap(key, l)
	if s.Released || !known || !prev.released && prev != l {
		hub.Wake(s.Lease.Election)
	}
}
