package caslease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// writeAttempts is how many read-decide-write rounds Acquire and Release
// make when their conditional writes keep losing races.
const writeAttempts = 4

// Backend implements fxelection.Backend (and backendkit.Transferer and
// backendkit.MinDurationer) on any Register; see the package
// documentation for the guarantees of its operations. Acquire, Renew,
// Release, Get and Transfer are backendkit.Redacting's: every error they
// return names the operation ("acquire lease: …") and passes through
// backendkit.RedactError once, with Options.Secrets. It does not
// implement backendkit.Notifier: NewNotifying's NotifyingBackend does, for
// a Register with a Watcher. It is safe for concurrent use. Each Backend
// has its own expiry tracker: on a store without server TTL, the
// observations that allow a takeover belong to the candidate (process)
// that made them.
type Backend struct {
	backendkit.Redacting // Acquire, Renew, Release, Get, Transfer, Redact

	reg     Register
	caps    Capabilities
	watcher Watcher // nil: no push wake-up
	opts    Options
	tracker backendkit.ExpiryTracker
	held    backendkit.HeldRecords // with Capabilities.KeepsRecords only
	hub     *backendkit.WakeHub
	refusal refusal // the watch the store refused, reported once

	// watchMin and watchMax bound the wait between attempts to
	// re-establish a broken watch (Options.WatchBackoff).
	watchMin, watchMax time.Duration
}

var (
	_ fxelection.Backend       = (*Backend)(nil)
	_ backendkit.Notifier      = (*NotifyingBackend)(nil)
	_ backendkit.NamedBackend  = (*Backend)(nil)
	_ backendkit.Transferer    = (*Backend)(nil)
	_ backendkit.MinDurationer = (*Backend)(nil)
)

// New returns a Backend on reg, which the caller owns. It does no I/O.
// opts.Name and opts.Key are required, opts.WatchBackoff must be valid
// (ErrOptions).
func New(reg Register, opts Options) (*Backend, error) {
	if reg == nil {
		return nil, errors.New("caslease: nil register")
	}
	if opts.Name == "" || opts.Key == nil {
		return nil, fmt.Errorf("%w: Name and Key are required", ErrOptions)
	}
	lo, hi, err := opts.WatchBackoff.bounds()
	if err != nil {
		return nil, err
	}
	b := &Backend{reg: reg, caps: reg.Capabilities(), opts: opts, watchMin: lo, watchMax: hi}
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: b.acquire, Renew: b.renew, Release: b.release, Get: b.get, Transfer: b.transfer,
	}, opts.Secrets...)
	if !opts.DisablePush {
		b.watcher, _ = reg.(Watcher)
	}
	if opts.MaxInFlight > 0 {
		l := limited{Register: reg, slots: make(chan struct{}, opts.MaxInFlight)}
		b.reg = l
		if b.watcher != nil {
			b.watcher = limitedWatcher{Watcher: b.watcher, l: l}
		}
	}
	b.hub = backendkit.NewWakeHub(b.listen)
	return b, nil
}

// BackendName returns Options.Name.
func (b *Backend) BackendName() string { return b.opts.Name }

// Key returns the store key of election's record (Options.Key), for
// operators and tests.
func (b *Backend) Key(election string) string { return b.opts.Key(election) }

// ServerTTL reports whether the store expires leases by its own clock
// (server-authoritative) rather than by observed time.
func (b *Backend) ServerTTL() bool { return b.caps.ServerTTL }

// MinLeaseDuration returns the store's MinTTL on a store with server TTL
// (memcached: one second), else 0 (backendkit.MinDurationer).
func (b *Backend) MinLeaseDuration() time.Duration {
	if !b.caps.ServerTTL {
		return 0
	}
	return b.caps.MinTTL
}

// Close stops push wake-up for good. The Backend stays usable without it.
// It does not close the store.
func (b *Backend) Close() error {
	b.hub.Close()
	return nil
}

// attempt runs round until it is done, at most writeAttempts times: a
// round that lost a race to another write (done false, nil error) reads
// and decides again.
func attempt[T any](round func() (T, bool, error)) (T, error) {
	for range writeAttempts {
		out, done, err := round()
		if done || err != nil {
			return out, err
		}
	}
	var zero T
	return zero, fmt.Errorf("lost %d compare-and-swap races in a row", writeAttempts)
}

// lostRace reports whether err says a conditional write lost to another
// write and wrote nothing.
func lostRace(err error) bool {
	return !errors.Is(err, ErrVersionUnknown) && (errors.Is(err, ErrConflict) || errors.Is(err, ErrExists))
}

// read returns election's entry; found is false if the key is absent (the
// entry then holds a tombstone's version, if the store keeps one). Its
// record's Lease.Version is the entry's version.
func (b *Backend) read(ctx context.Context, election string) (e Entry, found bool, err error) {
	e, err = b.reg.Get(ctx, b.opts.Key(election), election)
	found = !errors.Is(err, ErrNotFound)
	if !found {
		e, err = Entry{Version: e.Version, State: e.State}, nil
	}
	switch {
	case err != nil || !found:
	case e.Version == "":
		err = errors.New("store returned no version")
	case e.Record.Lease.Election != election:
		err = fmt.Errorf("%w: record of another election", backendkit.ErrInvalidRecord)
	default:
		e.Record.Lease.Version = e.Version
		if b.caps.KeepsRecords {
			b.held.Saw(election, e.Record)
		}
	}
	if err != nil || !found && !(b.caps.KeepsRecords && b.held.Vanished(election)) {
		// No observation spans a gap: a failed read, or a missing key
		// that was not read held before, starts the watch of the next
		// write afresh.
		b.tracker.Forget(election)
	}
	if err != nil {
		return Entry{}, found, err
	}
	return e, found, nil
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

// wrote forgets what this Backend observed of election: its own write
// replaced the record.
func (b *Backend) wrote(election string) {
	b.tracker.Forget(election)
	b.held.Forget(election)
}

// acquire (Backend.Acquire) takes req.Election's lease for req.Identity if the key is
// absent (free, expired, evicted or deleted), released, already held by
// req.Identity, or — on a store without server TTL — observed unchanged by
// this Backend for the record's full Duration; on a store that keeps
// records (Capabilities.KeepsRecords), a record this Backend last read
// held and now finds missing counts as that record until its absence has
// been observed for its Duration. backendkit.Claim decides; a new
// holder's term is backendkit.NextTerm of the last term the store shows,
// so it is clock-seeded and rises even when the record was lost. Every
// write is an add-if-absent or a compare-and-swap on the entry just read
// (a tombstone's, on a store that keeps them), and a call makes at most
// one write that succeeds: a write whose version the store cannot return
// (ErrVersionUnknown) ends the call with a store error, since the lease it
// wrote may already be another's. The first call that would return a
// *backendkit.HeldError after a Watcher's watch was refused returns that
// refusal instead (ErrWatchRefused).
func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	const op = "acquire lease"
	if req.Election == "" || req.Identity == "" {
		return fxelection.Lease{}, fmt.Errorf("%s: empty election or identity", op)
	}
	ttl, err := b.ttl(req.Duration)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	l, err := attempt(func() (fxelection.Lease, bool, error) { return b.acquireOnce(ctx, req, ttl) })
	var held *backendkit.HeldError
	if errors.As(err, &held) {
		if refused := b.takeRefusal(); refused != nil {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", op, refused) // see ErrWatchRefused
		}
		return fxelection.Lease{}, err // the holder's record, as Claim gave it
	}
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	return l, nil
}

// acquireOnce is one read-decide-write round of Acquire; done is false
// when its write lost a race and wrote nothing.
func (b *Backend) acquireOnce(ctx context.Context, req backendkit.AcquireRequest, ttl time.Duration) (fxelection.Lease, bool, error) {
	e, found, err := b.read(ctx, req.Election)
	if err != nil {
		return fxelection.Lease{}, false, err
	}
	cur, exists, expired := e.Record, found, func() bool {
		return b.tracker.Expired(req.Election, e.Version, e.Record.Write, e.Record.Lease.Duration)
	}
	switch {
	case !found && b.caps.KeepsRecords:
		// A record read held and now missing was deleted from outside.
		cur, exists, expired = b.held.Absent(&b.tracker, req.Election, req.Identity)
	case b.caps.ServerTTL:
		expired = nil // the store removes expired records
	}
	next, err := backendkit.Claim(req, cur, exists, expired, time.Now().UTC().Round(0))
	if err != nil {
		return fxelection.Lease{}, false, err
	}
	next.Metadata = maps.Clone(req.Metadata)
	if err := next.Validate(); err != nil {
		return fxelection.Lease{}, false, err
	}
	key, rec := b.opts.Key(req.Election), Record{Lease: next}
	var version string
	if found || e.Version != "" { // a record, or the tombstone read
		version, err = b.reg.CompareAndSwap(ctx, key, e, rec, ttl)
	} else {
		version, err = b.reg.Add(ctx, key, rec, ttl)
	}
	if lostRace(err) {
		return fxelection.Lease{}, false, nil // someone wrote first: read again
	}
	if err != nil {
		return fxelection.Lease{}, false, err
	}
	b.wrote(req.Election)
	next.Version = version
	return next, true, nil
}

// own reads lease's record and returns it if it still holds lease's
// leadership: same holder, incarnation and term, not released. Otherwise
// it returns an error matching backendkit.ErrLeaseLost (or a store
// failure).
//
// The version is deliberately not compared: only the holder writes its own
// term, so a record with the caller's holder, incarnation and term is the
// caller's lease even when the caller missed the answer to its last write
// (a renewal whose reply was lost, or cancelled by Stop, but which the
// store applied, changed the version). The write that follows is a
// compare-and-swap on the entry read here, so nothing written in between
// is overwritten.
//
// The incarnation is compared: two incarnations of one identity are two
// leaderships, and the holder and term alone cannot always tell them apart
// (clock-seeded terms handed out after the record was lost can coincide).
func (b *Backend) own(ctx context.Context, lease fxelection.Lease) (Entry, error) {
	if lease.Election == "" || lease.Holder == "" || lease.Term == 0 {
		return Entry{}, backendkit.ErrLeaseLost
	}
	e, found, err := b.read(ctx, lease.Election)
	cur := e.Record
	switch {
	case errors.Is(err, backendkit.ErrInvalidRecord):
		return Entry{}, fmt.Errorf("%w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return Entry{}, err
	case !found || cur.Released || cur.Lease.Holder != lease.Holder || cur.Lease.Term != lease.Term ||
		cur.Lease.Incarnation != lease.Incarnation:
		return Entry{}, backendkit.ErrLeaseLost
	}
	return e, nil
}

// renew (Backend.Renew) rewrites lease's record (same term, the caller's metadata and
// duration, a fresh TTL where the store expires keys) if the store still
// holds lease's leadership (see own), with a compare-and-swap on the entry
// just read; if the lease was taken over, released, expired, was evicted or
// deleted, or the compare-and-swap loses to a write made since the read,
// it returns an error matching backendkit.ErrLeaseLost. The returned lease
// carries the new version; a renewal stored whose version the store cannot
// return (ErrVersionUnknown) gives a store error, not ErrLeaseLost.
func (b *Backend) renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	l, err := b.renewOnce(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	return l, nil
}

// renewOnce is renew's read and compare-and-swap.
func (b *Backend) renewOnce(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	ttl, err := b.ttl(lease.Duration)
	if err != nil {
		return fxelection.Lease{}, err
	}
	e, err := b.own(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, err
	}
	next := e.Record.Lease.Clone()
	next.Metadata = maps.Clone(lease.Metadata)
	next.Duration = lease.Duration
	return b.replaceOwn(ctx, e, next, ttl)
}

// replaceOwn writes next over the caller's own record e with one
// compare-and-swap: a lost compare-and-swap is ErrLeaseLost (the record
// changed since own read it). Renew and Transfer share it.
func (b *Backend) replaceOwn(ctx context.Context, e Entry, next fxelection.Lease, ttl time.Duration) (fxelection.Lease, error) {
	next.Version, next.ExpiresAt = "", time.Time{}
	if err := next.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	version, err := b.reg.CompareAndSwap(ctx, b.opts.Key(next.Election), e, Record{Lease: next}, ttl)
	if lostRace(err) {
		return fxelection.Lease{}, backendkit.ErrLeaseLost
	}
	if err != nil {
		return fxelection.Lease{}, err
	}
	next.Version = version
	return next, nil
}

// release (Backend.Release) replaces lease's record, if it still holds lease's leadership
// (see own: holder, incarnation and term, whichever write of it), with a
// released marker that keeps the term and has no TTL (a cache may still
// evict it; terms stay clock-seeded then), with a compare-and-swap on the
// entry just read; one that loses to a write made since (a late renewal
// of the holder's) reads again. Releasing a lease that is no longer the
// caller's returns nil. Watchers of the store see the change (push
// wake-up).
func (b *Backend) release(ctx context.Context, lease fxelection.Lease) error {
	_, err := attempt(func() (struct{}, bool, error) {
		e, err := b.own(ctx, lease)
		if errors.Is(err, backendkit.ErrLeaseLost) {
			return struct{}{}, true, nil
		}
		if err != nil {
			return struct{}{}, false, err
		}
		_, err = b.reg.CompareAndSwap(ctx, b.opts.Key(lease.Election), e, Record{Lease: e.Record.Lease, Released: true}, 0)
		if lostRace(err) {
			return struct{}{}, false, nil // written since the read: read again
		}
		if err != nil && !errors.Is(err, ErrVersionUnknown) {
			return struct{}{}, false, err
		}
		// ErrVersionUnknown: the marker was stored; the release is done.
		b.held.Forget(lease.Election)
		return struct{}{}, true, nil
	})
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// transfer (Backend.Transfer, backendkit.Transferer) ends lease, matched as
// Release matches it (own: holder, incarnation and term, not released; not
// the version), and in the same write replaces it with the record Acquire
// would write for req on a free lease: held by req.Identity under
// req.Incarnation, with req.Metadata, for req.Duration (the store's TTL as
// Acquire sets it), acquired now, and the term backendkit.ClaimTransfer
// gives (backendkit.NextTerm of the lease's), so strictly above every term
// the election had. That write is one compare-and-swap on the entry own
// read, so the lease is never free in between and nothing written since
// the read is overwritten.
//
// req is checked first (backendkit.CheckTransfer, and a duration the
// store's TTL can express). A lease that is no longer the caller's and a
// compare-and-swap that loses to a write made since the read (as for
// Renew) change nothing and give an error matching backendkit.ErrLeaseLost.
// A lease at backendkit.MaxTerm changes nothing either and gives
// backendkit.ErrTermExhausted. A transfer stored whose version the store
// cannot return (ErrVersionUnknown) gives a store error: it happened, but
// the hint's version is unknown.
//
// Watchers of the store see the new holder's record, which wakes the
// election's subscribers although the lease was never free (see
// Subscribe); without a Watcher followers learn of the new holder at their
// next retry.
func (b *Backend) transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.transferOnce(ctx, lease, req)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	return l, nil
}

// transferOnce is transfer's read and compare-and-swap.
func (b *Backend) transferOnce(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := backendkit.CheckTransfer(lease, req); err != nil {
		return fxelection.Lease{}, err
	}
	ttl, err := b.ttl(req.Duration)
	if err != nil {
		return fxelection.Lease{}, err
	}
	e, err := b.own(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, err
	}
	next, err := backendkit.ClaimTransfer(req, e.Record, time.Now().UTC().Round(0))
	if err != nil {
		return fxelection.Lease{}, err
	}
	next.Metadata = maps.Clone(req.Metadata)
	out, err := b.replaceOwn(ctx, e, next, ttl)
	if err == nil {
		b.wrote(lease.Election)
	}
	return out, err
}

// get (Backend.Get) returns election's current holder with Version set to the store's
// version and a zero ExpiresAt, or backendkit.ErrNoLease if the key is
// absent or released. It changes nothing in the store; on a store without
// server TTL it starts this Backend's observation of the write it saw (or
// of a held record's absence), as an Acquire would.
func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	e, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	if !found && b.caps.KeepsRecords {
		if _, deleted, expired := b.held.Absent(&b.tracker, election, ""); deleted {
			expired() // starts the watch of the absence, as Acquire would
		}
	}
	if !found || e.Record.Released {
		return fxelection.Lease{}, backendkit.ErrNoLease
	}
	if !b.caps.ServerTTL {
		b.tracker.Expired(election, e.Version, e.Record.Write, e.Record.Lease.Duration)
	}
	return e.Record.Lease, nil
}

// NotifyingBackend is a Backend that implements backendkit.Notifier
// (push wake-up); see Subscribe.
type NotifyingBackend struct {
	*Backend
}

// NewNotifying returns a NotifyingBackend on reg, as New returns a
// Backend.
func NewNotifying(reg Register, opts Options) (*NotifyingBackend, error) {
	b, err := New(reg, opts)
	if err != nil {
		return nil, err
	}
	return &NotifyingBackend{Backend: b}, nil
}

// Subscribe implements backendkit.Notifier. On a Register that implements
// Watcher, wake is called when a lease of election is released, handed to
// another leadership in one write (Transfer, a takeover, another
// incarnation's acquisition) or its key deleted, but not when its holder
// renews it; and (spuriously) for every election each time the watch is
// (re)established, since a release may have been missed while it was down,
// and when the watch sees an election's first write since then, which may
// have been a hand-over. All subscriptions share one watch
// (backendkit.WakeHub). On any other Register, or with
// Options.DisablePush, Subscribe does nothing and followers poll.
func (b *NotifyingBackend) Subscribe(election string, wake func()) (cancel func()) {
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
		err := b.watcher.Watch(ctx, b.opts.Prefix, func() {
			failures = 0
			b.watchAllowed()
			hub.WakeAll()
		}, func(c Change) { b.changed(hub, seen, c) })
		if ctx.Err() != nil {
			return
		}
		b.watchFailed(err) // the elector keeps polling meanwhile
		failures++
		if !backendkit.SleepContext(ctx, backendkit.Backoff(failures, b.watchMin, b.watchMax)) {
			return
		}
	}
}

// leadership is what a renewal of a record keeps: its holder, incarnation
// and term, live or released.
type leadership struct {
	holder, incarnation string
	term                uint64
	released            bool
}

// watched is what one watch has seen of the keys under the prefix: the
// leadership of each key's last record (none for a key deleted since). It
// holds at most one small entry per key in the store under the prefix.
type watched struct {
	mu   sync.Mutex
	last map[string]leadership
}

// swap records l as key's last record and returns the one before it;
// known is false when the watch has seen none (or the key was deleted
// since).
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
// delete, a released marker, or a live record whose leadership (holder,
// incarnation, term) is not that of the live record seen before it — a
// Transfer's new holder, a takeover of an expired lease, another
// incarnation's acquisition — or whose predecessor this watch did not see.
// A renewal (the same leadership) wakes nobody, deliberately: it comes
// every RetryPeriod and frees nothing; nor does a lease taken after a
// release, whose followers the release woke already.
func (b *Backend) changed(hub *backendkit.WakeHub, seen *watched, c Change) {
	if c.Deleted {
		seen.forget(c.Key)
		election, ok := "", false
		if b.opts.ElectionOf != nil {
			election, ok = b.opts.ElectionOf(c.Key)
		}
		if ok {
			hub.Wake(election)
		} else {
			hub.WakeAll() // the key does not name the election
		}
		return
	}
	s := c.Record
	if c.Err != nil || s.Lease.Election == "" || b.opts.Key(s.Lease.Election) != c.Key {
		seen.forget(c.Key) // a foreign value: what follows it is a change
		return
	}
	l := leadership{holder: s.Lease.Holder, incarnation: s.Lease.Incarnation, term: s.Lease.Term, released: s.Released}
	prev, known := seen.swap(c.Key, l)
	if s.Released || !known || !prev.released && prev != l {
		hub.Wake(s.Lease.Election)
	}
}
