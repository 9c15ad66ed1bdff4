package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/keeper"
)

const (
	// incarnationLen is the length of backendkit.NewIncarnation's tokens.
	incarnationLen = 16
)

// MaxIdentityLen is the longest Options.Identity accepted, in bytes: the
// lease's holder is the identity, a '/' and the acquisition's
// incarnation token, and must fit backendkit.MaxIdentityLen.
const MaxIdentityLen = backendkit.MaxIdentityLen - 1 - incarnationLen

var (
	// ErrLocked means another holder has the lock. TryAcquire returns it
	// wrapping the backend's *backendkit.HeldError, which carries the
	// current holder and term (errors.As gets it).
	ErrLocked = errors.New("lock: held by another holder")
	// ErrInvalidKey means a key (or a semaphore's name) breaks the rule
	// for user-given election names (backendkit.UserNameProblem): at
	// most backendkit.MaxNameLen bytes of printable UTF-8, not empty,
	// without '#'.
	ErrInvalidKey = errors.New("lock: invalid key")
	// ErrLost is the cause (context.Cause) of a Lock's Context that ended
	// because the lock was lost: a renewal found the lease taken or
	// expired, or no renewal succeeded within RenewDeadline.
	ErrLost = errors.New("lock: lost")
	// ErrReleased is the cause (context.Cause) of a Lock's Context that
	// ended because the Lock was released.
	ErrReleased = errors.New("lock: released")
	// ErrClosed means the Locker was closed (Close): it takes no more
	// locks, and its waiters return it.
	ErrClosed = errors.New("lock: locker closed")
	// errNilBackend is New's error for a nil backend.
	errNilBackend = errors.New("lock: backend: required")
)

// Options configures a Locker. The zero value of every field means its
// documented default; the durations are an fxelection.Timing, checked by
// Timing.Validate.
type Options struct {
	// Identity names this Locker in the lease records it writes: the
	// holder of each lock it takes is Identity, '/' and a random token of
	// that acquisition, so that every acquisition is a holder of its own
	// (and two goroutines sharing a Locker exclude each other). At most
	// MaxIdentityLen bytes of printable UTF-8. Default:
	// fxelection.DefaultIdentity().
	Identity string

	// Timing is the locks' timing, with fxelection.Timing's defaults and
	// rules (LeaseDuration > RenewDeadline > 1.2 × RetryPeriod,
	// RetryPeriod at least 10ms). LeaseDuration is how long a lock lasts in
	// the store without a renewal: a holder that vanishes without
	// releasing is replaced once it has passed and a waiter polls again.
	// RenewDeadline bounds how long a holder keeps the lock (its Context
	// not ended) without a successful renewal, measured on the local
	// monotonic clock from the start of the last successful renewal or
	// the acquisition, so that the Context ends before another holder can
	// take the lock; it also bounds each attempt to acquire. RetryPeriod
	// is how often a held lock is renewed and how often a waiter without
	// push wake-up tries again (RetryPeriod to 1.2 × RetryPeriod,
	// jittered). A waiter's backoff after store failures is capped at
	// LeaseDuration; MaxBackoff is validated as fxelection.Timing's but not
	// used by a Locker.
	fxelection.Timing

	// Observer, when set, receives the Locker's events (acquisitions with
	// their outcome and wait, releases, losses): package metrics turns
	// them into series. It is called synchronously and must not block.
	Observer Observer
}

// withDefaults returns o with defaults filled in.
func (o Options) withDefaults() Options {
	if o.Identity == "" {
		o.Identity = fxelection.DefaultIdentity()
	}
	o.Timing = o.Timing.WithDefaults()
	return o
}

// Validate fills in defaults and checks o. The error is a
// *fxelection.ConfigError whose Field names the bad Options field.
func (o Options) Validate() error {
	_, err := o.normalize()
	return err
}

// normalize returns o with defaults, or the first problem with it.
func (o Options) normalize() (Options, error) {
	o = o.withDefaults()
	if len(o.Identity) > MaxIdentityLen {
		return o, &fxelection.ConfigError{Field: "Identity",
			Reason: fmt.Sprintf("must be at most %d bytes (is %d)", MaxIdentityLen, len(o.Identity))}
	}
	// fxelection.Config's rules for the identity and the durations; its
	// field names are Options' own. Name is a placeholder: keys are
	// checked per call.
	err := fxelection.Config{
		Name: "lock", Identity: o.Identity,
		Timing: fxelection.Timing{
			LeaseDuration: o.LeaseDuration,
			RenewDeadline: o.RenewDeadline,
			RetryPeriod:   o.RetryPeriod,
		},
	}.Validate()
	return o, err
}

// checkKey applies the rule for user-given names to key.
func checkKey(key string) error {
	if problem := backendkit.UserNameProblem(key); problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalidKey, problem)
	}
	return nil
}

// Locker takes locks on one backend. It is safe for concurrent use. Each
// held Lock has a timer for its renewals, which Release stops (a renewal
// in flight, on a goroutine of its own, is let finish); an attempt to acquire
// under a context that can end makes its store call on a goroutine of its
// own, which outlives the attempt only to give back what an abandoned call
// won (see Acquire). Close it when done (the fx module does, on stop):
// that releases the locks still held and waits for those give-backs.
type Locker struct {
	backend  fxelection.Backend
	keep     *keeper.Config      // its locks' keepers' (but those with an Observer)
	notifier backendkit.Notifier // nil without push wake-up
	opts     Options

	mu     sync.Mutex
	held   map[*Lock]struct{} // not yet released (lost ones included)
	closed chan struct{}      // closed by Close
	isShut bool
	bg     int           // store calls and give-backs running in the background
	bgIdle chan struct{} // closed when bg drops to 0
}

// New returns a Locker on backend. Its locks' renewals share round trips
// with each other when the backend renews in batches; NewInGroup shares
// them with the electors of a group too. It returns a
// *fxelection.ConfigError naming the first bad Options field (RenewDeadline
// too when the backend limits it: backendkit.RenewDeadlineLimiter).
func New(backend fxelection.Backend, opts Options) (*Locker, error) {
	if backend == nil {
		return nil, errNilBackend
	}
	g, err := fxelection.NewGroup(backend)
	if err != nil {
		return nil, err
	}
	return NewInGroup(g, opts)
}

// NewInGroup returns a Locker on the group's backend whose renewals share
// the group's batches: on a backend that renews in batches
// (backendkit.BatchRenewer: Redis, PostgreSQL, the in-memory backend), the
// locks and the group's electors renewing in the same slot of their grid
// cost one round trip.
func NewInGroup(g *fxelection.Group, opts Options) (*Locker, error) {
	if g == nil {
		return nil, errNilBackend
	}
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	backend := g.Backend()
	if problem := backendkit.RenewDeadlineProblem(backend, opts.RenewDeadline); problem != "" {
		return nil, &fxelection.ConfigError{Field: "RenewDeadline", Reason: problem}
	}
	n, _ := backend.(backendkit.Notifier)
	keep := &keeper.Config{Renewer: keeper.GroupRenewer(g), // renewals share the group's batches
		RenewDeadline: opts.RenewDeadline, RetryPeriod: opts.RetryPeriod, Lost: ErrLost}
	return &Locker{backend: backend, keep: keep, notifier: n, opts: opts,
		held: make(map[*Lock]struct{}), closed: make(chan struct{})}, nil
}

// Close makes the Locker take no more locks (waiters in Acquire return
// ErrClosed, even with a store call in flight) and releases every Lock it
// still holds, as Release does, then waits for the give-backs of
// abandoned acquisitions (see Acquire), all bounded by ctx. It returns the
// releases' errors and ctx's if the give-backs outlast it, joined; locks
// it could not release expire after LeaseDuration. It is idempotent.
func (l *Locker) Close(ctx context.Context) error {
	l.mu.Lock()
	if !l.isShut {
		l.isShut = true
		close(l.closed)
	}
	held := make([]*Lock, 0, len(l.held))
	for lk := range l.held {
		held = append(held, lk)
	}
	l.mu.Unlock()
	var errs []error
	for _, lk := range held {
		if err := lk.Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.Lock()
	busy, idle := l.bg > 0, l.bgIdle
	l.mu.Unlock()
	if busy {
		select {
		case <-idle:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("lock: close: abandoned acquisitions still being given back: %w", ctx.Err()))
		}
	}
	return errors.Join(errs...)
}

// begin counts a store call or give-back running in the background; end
// uncounts it. Close waits for the count to drop to 0.
func (l *Locker) begin() {
	l.mu.Lock()
	if l.bg == 0 {
		l.bgIdle = make(chan struct{})
	}
	l.bg++
	l.mu.Unlock()
}

// end uncounts what begin counted.
func (l *Locker) end() {
	l.mu.Lock()
	if l.bg--; l.bg == 0 {
		close(l.bgIdle)
	}
	l.mu.Unlock()
}

// Held returns how many Locks the Locker holds now (taken and not yet
// released; a Lock lost but not released counts until it is released).
func (l *Locker) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// Options returns the Locker's options with defaults filled in.
func (l *Locker) Options() Options { return l.opts }

// Acquire takes the lock on key, waiting until it is held or ctx is done.
// It tries at once, then again when the backend reports a release (where
// it implements backendkit.Notifier) and otherwise every RetryPeriod to
// 1.2 × RetryPeriod; store failures back off exponentially up to
// LeaseDuration. Every Acquire is an acquisition of its own with a fresh
// incarnation, so its term is higher than any the key had before.
//
// When ctx ends first it returns an error matching ctx's error (and the
// last attempt's, such as ErrLocked), at once, even with a store call in
// flight. An invalid key gives an error matching ErrInvalidKey, a closed
// Locker ErrClosed. ctx bounds only the wait: the Lock's Context carries
// ctx's values but not its cancellation.
//
// An attempt's store call is not cut by ctx: it runs on a context of its
// own, bounded by RenewDeadline from its start, so that its outcome is
// known. When ctx ends (or the Locker closes) while it is in flight, the
// call runs on and a lease it wins is released at once, on a context of
// its own bounded by RenewDeadline. When an acquisition ends after a call
// whose outcome is unknown (a store failure or a call cut at its
// deadline: the store may have granted the lease all the same), it is
// given back the same way: re-acquired as the same incarnation, which
// keeps the lease and its term if the store did grant it, and released.
// Either way the key is not left held by nobody for LeaseDuration; the
// give-back runs in the background, and Close waits for it.
func (l *Locker) Acquire(ctx context.Context, key string) (*Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return l.acquire(ctx, target{name: key}, true)
}

// TryAcquire makes one attempt to take the lock on key. If another holder
// has it, the error matches ErrLocked and wraps the backend's
// *backendkit.HeldError with the holder and its term. An invalid key gives
// an error matching ErrInvalidKey, a closed Locker ErrClosed; any other
// error is a store failure or ctx's. An attempt that fails or is cut short
// gives back what it may have won, as Acquire does.
func (l *Locker) TryAcquire(ctx context.Context, key string) (*Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return l.acquire(ctx, target{name: key}, false)
}

// target is what an acquisition takes: a lock, one record named by its
// key, or a semaphore of n slots, each a record of its own.
type target struct {
	name string
	n    int // 0 for a lock
}

// slots returns how many records the target has.
func (t target) slots() int { return max(t.n, 1) }

// record returns the name of the record of slot i.
func (t target) record(i int) string {
	if t.n == 0 {
		return t.name
	}
	return semaphoreRecord(t.name, i)
}

// acquisition is one call of Acquire, TryAcquire or their semaphore
// forms: what it takes, the incarnation of all its attempts, and the slot
// whose last store call has an unknown outcome (-1 if none).
type acquisition struct {
	tg     target
	inc    string
	unsure int
}

// acquire takes tg, waiting when wait is set, gives back what a failed
// acquisition may hold, and tells the observer how it went.
func (l *Locker) acquire(ctx context.Context, tg target, wait bool) (*Lock, error) {
	start := time.Now()
	a := &acquisition{tg: tg, inc: backendkit.NewIncarnation(), unsure: -1}
	var lk *Lock
	var err error
	if wait {
		lk, err = l.wait(ctx, a)
	} else {
		lk, err = l.try(ctx, a)
	}
	if err != nil && a.unsure >= 0 {
		req := l.request(tg.record(a.unsure), a.inc)
		l.begin()
		go func() {
			defer l.end()
			l.giveBack(context.WithoutCancel(ctx), req, outcome{err: errUnknown})
		}()
	}
	if o := l.opts.Observer; o != nil {
		ev := Event{Kind: EventAcquire, Key: tg.name, Semaphore: tg.n, Wait: time.Since(start), Err: err}
		switch {
		case err == nil:
			ev.Outcome = OutcomeAcquired
		case errors.Is(err, ErrClosed):
			ev.Outcome = OutcomeClosed
		case ctx.Err() != nil:
			ev.Outcome = OutcomeCanceled
		case errors.Is(err, ErrLocked):
			ev.Outcome = OutcomeLocked
		default:
			ev.Outcome = OutcomeError
		}
		o.ObserveLock(ev)
	}
	return lk, err
}

// wait tries to take a's target until it is held, ctx ends or the Locker
// closes.
func (l *Locker) wait(ctx context.Context, a *acquisition) (*Lock, error) {
	tg := a.tg
	lk, err := l.try(ctx, a)
	if err == nil {
		return lk, nil
	}
	// Refused or failed: wait. Subscribe only now: a subscription may
	// cost a connection (the first one starts the backend's listener: a
	// Redis pub/sub connection, a PostgreSQL LISTEN session), which an
	// uncontended lock must not pay for. A release between the refused
	// attempt and the subscription would be missed, so a refused attempt
	// is followed by another at once.
	woken := make(chan struct{}, 1)
	if l.notifier != nil {
		wake := func() {
			select {
			case woken <- struct{}{}:
			default: // one pending wake-up is enough
			}
		}
		for i := range tg.slots() {
			cancel := l.notifier.Subscribe(tg.record(i), wake)
			defer cancel()
		}
		if errors.Is(err, ErrLocked) {
			wake()
		}
	}
	failures := 0
	for {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		if cerr := ctx.Err(); cerr != nil {
			if errors.Is(err, cerr) {
				return nil, fmt.Errorf("lock: acquire: %w", err)
			}
			return nil, fmt.Errorf("lock: acquire: %w (last attempt: %w)", cerr, err)
		}
		if errors.Is(err, ErrLocked) {
			failures = 0
		} else {
			failures++
		}
		t := time.NewTimer(keeper.AttemptRetry(l.opts.RetryPeriod, l.opts.LeaseDuration, failures))
		select {
		case <-t.C:
		case <-woken:
			t.Stop()
		case <-l.closed:
			t.Stop()
			return nil, ErrClosed
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock: acquire: %w (last attempt: %w)", ctx.Err(), err)
		}
		if lk, err = l.try(ctx, a); err == nil {
			return lk, nil
		}
	}
}

// try makes one attempt on a's target: for a semaphore, on each slot in
// turn until one is taken (at most n Acquire calls), from the slot whose
// last call has an unknown outcome if there is one (so that it is settled
// first: taken again, or found held by another), else from a random one
// (which spreads concurrent waiters over the slots). A store failure ends
// the attempt.
func (l *Locker) try(ctx context.Context, a *acquisition) (*Lock, error) {
	n := a.tg.slots()
	off := a.unsure
	if off < 0 {
		off = 0
		if n > 1 {
			off = rand.IntN(n)
		}
	}
	var err error
	for j := range n {
		if l.isClosed() {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("lock: acquire %q: %w", a.tg.name, err)
		}
		var lk *Lock
		lk, err = l.tryRecord(ctx, a, (off+j)%n)
		if err == nil || !errors.Is(err, ErrLocked) {
			return lk, err
		}
	}
	return nil, err
}

// isClosed reports whether Close was called.
func (l *Locker) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

// errWonLate is an attempt's error when the backend granted the lease
// only after the renew deadline of the attempt had passed.
var errWonLate = errors.New("lock: acquired after the renew deadline; given back")

// errUnknown stands for the outcome of a store call that is not known: a
// give-back re-acquires to learn it.
var errUnknown = errors.New("lock: outcome unknown")

// request is the Acquire request of incarnation inc for record.
func (l *Locker) request(record, inc string) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{
		Election:    record,
		Identity:    l.opts.Identity + "/" + inc,
		Duration:    l.opts.LeaseDuration,
		Incarnation: inc,
	}
}

// refused reports whether err, from an Acquire call, says for certain that
// the call took nothing: the lease is held by another, its terms are
// exhausted, or its record is unreadable.
func refused(err error) bool {
	return errors.Is(err, backendkit.ErrLeaseHeld) || errors.Is(err, backendkit.ErrTermExhausted) ||
		errors.Is(err, backendkit.ErrInvalidRecord)
}

// outcome is what one Acquire call returned.
type outcome struct {
	lease fxelection.Lease
	err   error
}

// call makes the Acquire call req on a context of its own, derived from
// ctx's values and bounded by deadline but not ended by ctx, and waits for
// it until ctx ends or the Locker closes. abandoned reports that it
// stopped waiting: the call then runs on, on a goroutine of its own, and
// what it wins is given back (giveBack).
func (l *Locker) call(ctx context.Context, req backendkit.AcquireRequest, deadline time.Time) (o outcome, abandoned bool) {
	base := context.WithoutCancel(ctx)
	cctx, cancel := context.WithDeadline(base, deadline)
	if ctx.Done() == nil { // ctx never ends: nothing to wait for but the call
		o.lease, o.err = l.backend.Acquire(cctx, req)
		cancel()
		return o, false
	}
	res := make(chan outcome) // unbuffered: a send succeeds only while the caller waits
	gaveUp := make(chan struct{})
	l.begin()
	go func() {
		defer l.end()
		var o outcome
		o.lease, o.err = l.backend.Acquire(cctx, req)
		cancel()
		select {
		case res <- o:
		case <-gaveUp:
			l.giveBack(base, req, o)
		}
	}()
	select {
	case o = <-res:
		return o, false
	case <-ctx.Done():
	case <-l.closed:
	}
	close(gaveUp)
	return outcome{}, true
}

// giveBack frees what an acquisition nobody waits for any more may hold
// on req's record: o's lease when its call won; when its outcome is
// unknown (a store failure, a call cut at its deadline), what a
// re-acquisition as req's incarnation finds (the lease, with its term,
// if the store granted it; the key, briefly, if not); nothing when it was
// refused. Each store call is bounded by RenewDeadline, on a context of
// its own carrying base's values; if one fails, the lease expires after
// LeaseDuration.
func (l *Locker) giveBack(base context.Context, req backendkit.AcquireRequest, o outcome) {
	if o.err != nil {
		if refused(o.err) {
			return
		}
		actx, cancel := context.WithTimeout(base, l.opts.RenewDeadline)
		o.lease, o.err = l.backend.Acquire(actx, req)
		cancel()
		if o.err != nil {
			return // refused: not ours; failed: it expires
		}
	}
	rctx, cancel := context.WithTimeout(base, l.opts.RenewDeadline)
	_ = l.backend.Release(rctx, o.lease)
	cancel()
}

// tryRecord makes one Acquire call for slot i of a's target, bounded by
// RenewDeadline from its start (belief is measured from there), and
// starts the Lock. It records in a.unsure whether the call's outcome is
// unknown.
func (l *Locker) tryRecord(ctx context.Context, a *acquisition, i int) (*Lock, error) {
	start := time.Now()
	record := a.tg.record(i)
	o, abandoned := l.call(ctx, l.request(record, a.inc), start.Add(l.opts.RenewDeadline))
	if abandoned {
		// Given back by call; an earlier call on the record with an
		// unknown outcome is this one's predecessor as the same
		// incarnation, settled by it.
		a.unsure = -1
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("lock: acquire %q: %w", record, err)
		}
		return nil, ErrClosed
	}
	a.unsure = -1
	switch {
	case errors.Is(o.err, backendkit.ErrLeaseHeld):
		return nil, fmt.Errorf("%w: %w", ErrLocked, o.err)
	case o.err != nil:
		if !refused(o.err) {
			a.unsure = i
		}
		return nil, fmt.Errorf("lock: acquire %q: %w", record, o.err)
	}
	if time.Since(start) >= l.opts.RenewDeadline {
		// A backend that ignored its context granted it too late to be
		// believed at all: give it back (bounded, even if ctx is done).
		l.giveBack(context.WithoutCancel(ctx), backendkit.AcquireRequest{}, o)
		return nil, fmt.Errorf("lock: acquire %q: %w", record, errWonLate)
	}
	return l.start(ctx, a, i, o.lease, start)
}

// track adds lk to the held locks; false once the Locker is closed.
func (l *Locker) track(lk *Lock) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isShut {
		return false
	}
	l.held[lk] = struct{}{}
	return true
}

// untrack removes lk from the held locks.
func (l *Locker) untrack(lk *Lock) {
	l.mu.Lock()
	delete(l.held, lk)
	l.mu.Unlock()
}

// Lock is a held lock, or a held slot of a semaphore. Its Context ends
// before another holder can take it; its Term is the fencing token for
// writes made under it. Release it when done: that ends its renewals and
// frees it for the next waiter. Its methods are safe for concurrent use.
type Lock struct {
	locker   *Locker
	tg       target
	slot     int
	inc      string           // the acquisition's incarnation
	acquired fxelection.Lease // as acquired; carried by the Context
	at       time.Time        // when the acquisition began
	k        keeper.Keeper    // renews the lease, ends the Context

	quiet atomic.Bool // never handed out: its end is not observed

	relMu    sync.Mutex
	released bool // the store's Release succeeded
}

// start returns the Lock for lease, slot i of a's target, acquired by an
// attempt that began at start, and starts its keeper. The Lock is
// tracked, so that Close releases it; if Close came first, it is released
// here and start returns ErrClosed.
func (l *Locker) start(ctx context.Context, a *acquisition, i int, lease fxelection.Lease, start time.Time) (*Lock, error) {
	lk := &Lock{locker: l, tg: a.tg, slot: i, inc: a.inc, acquired: lease.Clone(), at: start}
	kc := l.keep
	if l.opts.Observer != nil { // a Config of its own, telling of this Lock
		c := *kc
		c.OnEnd, kc = lk.ended, &c
	}
	lk.k.Start(backendkit.ContextWithLease(ctx, lease.Clone()), kc, lease, start)
	if !l.track(lk) {
		// Closed since try checked: Close did not see this Lock. Bounded,
		// even if ctx is done; if this fails, the lease expires. It was
		// never handed out, so the observer hears of no release (the
		// acquisition reports OutcomeClosed).
		lk.quiet.Store(true)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.RenewDeadline)
		_ = lk.Release(rctx)
		cancel()
		return nil, ErrClosed
	}
	return lk, nil
}

// Key returns the lock's key, or the semaphore's name.
func (lk *Lock) Key() string { return lk.tg.name }

// Slot returns which slot of the semaphore the Lock holds, from 0 to n−1
// (0 for a lock).
func (lk *Lock) Slot() int { return lk.slot }

// Term returns the fencing token: the term of the lease as acquired. It
// stays the same while the Lock is renewed and is higher than the term of
// every earlier holder of the key (of the slot, for a semaphore). Guard
// external writes with it.
func (lk *Lock) Term() uint64 { return lk.acquired.Term }

// Lease returns the lock's lease as last renewed (its Term is Term()).
func (lk *Lock) Lease() fxelection.Lease { return lk.k.Lease() }

// Context returns a context that ends when the lock is released, when a
// renewal finds the lease lost, or at the renew deadline: RenewDeadline
// after the start of the last successful renewal (or of the acquisition)
// with no successful renewal since, which is before the lease can expire
// in the store and another holder take it. context.Cause tells which:
// ErrReleased, or an error matching ErrLost. It carries the lease as
// acquired (backendkit.LeaseFromContext) and the lock's own fencing token,
// which guards that read the token from a context (package fence) use
// whatever token the context given to Acquire carried, and that context's
// other values.
func (lk *Lock) Context() context.Context { return lk.k.Context() }

// ended tells the observer of the end of the Lock's Context, once (the
// keeper calls it): a release (cause ErrReleased) or a loss.
func (lk *Lock) ended(cause error) {
	if o := lk.locker.opts.Observer; !lk.quiet.Load() {
		ev := Event{Kind: EventLost, Key: lk.tg.name, Semaphore: lk.tg.n, Held: time.Since(lk.at), Err: cause}
		if errors.Is(cause, ErrReleased) {
			ev.Kind, ev.Err = EventRelease, nil
		}
		o.ObserveLock(ev)
	}
}

// Release ends the Lock's Context and its renewals, waits for them to
// stop (a renewal in flight is let finish, within its renew deadline, so
// that the release matches what the store last wrote), and releases the
// lease in the store, so that the next waiter (woken by the backend's
// push, where it has one) takes the lock at once.
//
// When the last renewal failed or was cut at its deadline, the store may
// have applied it all the same, and a store that matches the last write on
// release (PostgreSQL's expires_at) would free nothing given the lease as
// it was before: Release then first re-acquires as the Lock's incarnation,
// which returns the lease as the store has it (the same term) if it is
// still the Lock's, and releases that; a key another holder has taken
// since is left alone.
//
// ctx bounds the whole call. It is idempotent: once the store's release
// succeeded (releasing a lock already lost succeeds too), later calls
// return nil at once; after a failure a later call (or the Locker's Close)
// tries again, and the lease otherwise expires after LeaseDuration.
func (lk *Lock) Release(ctx context.Context) error {
	lk.relMu.Lock()
	defer lk.relMu.Unlock()
	if lk.released {
		return nil
	}
	record := lk.tg.record(lk.slot)
	lease, unsure, err := lk.k.Stop(ctx, ErrReleased)
	if err != nil {
		return fmt.Errorf("lock: release %q: %w", record, err)
	}
	if unsure {
		cur, err := lk.locker.backend.Acquire(ctx, lk.locker.request(record, lk.inc))
		switch {
		case err == nil:
			lease = cur
			lk.k.Settle(cur)
		case refused(err): // not the Lock's any more: nothing to release
			lk.released = true
			lk.locker.untrack(lk)
			return nil
		default:
			return fmt.Errorf("lock: release %q: %w", record, err)
		}
	}
	if err := lk.locker.backend.Release(ctx, lease); err != nil {
		return fmt.Errorf("lock: release %q: %w", record, err)
	}
	lk.released = true
	lk.locker.untrack(lk)
	return nil
}
