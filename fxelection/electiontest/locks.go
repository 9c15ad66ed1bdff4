package electiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// LockOptions tune the Locks part of RunBackendTests: package lock's locks
// and semaphores on the backend, each client a lock.Locker of its own on a
// backend of its own (newBackend), as separate processes would be. The
// Lockers' LeaseDuration and RenewDeadline are Options.Timing's; their
// RetryPeriod is RetryPeriod here. Zero fields take the defaults.
type LockOptions struct {
	// Counter returns the fenced store the MutualExclusion case's holders
	// write through (it is called once per run; the store may be shared
	// with other runs, since every run uses keys of its own). Default: an
	// in-process counter (NewMemoryCounter), which checks terms as a fenced
	// store does but fences nothing outside the test process; the backends
	// of this repository pass a real store (package fencedcounter:
	// redisfence on a Redis of the test's own; Postgres's tests pgfence).
	Counter func(t *testing.T) FencedCounter

	// Clients is how many Lockers contend for one lock in the
	// MutualExclusion case. Default: 8.
	Clients int

	// Acquisitions is how many times each of them takes the lock there.
	// Default: 200.
	Acquisitions int

	// SemaphoreClients is how many Lockers share a semaphore of 3 slots in
	// the Semaphore case. Default: 10.
	SemaphoreClients int

	// SemaphoreRounds is how many times each of them takes a slot there.
	// Default: 30.
	SemaphoreRounds int

	// RetryPeriod is the Lockers' RetryPeriod: how often a waiter polls on
	// a backend without push wake-up (and a holder renews). Default: 50ms.
	RetryPeriod time.Duration
}

func (o LockOptions) withDefaults() LockOptions {
	if o.Clients == 0 {
		o.Clients = 8
	}
	if o.Acquisitions == 0 {
		o.Acquisitions = 200
	}
	if o.SemaphoreClients == 0 {
		o.SemaphoreClients = 10
	}
	if o.SemaphoreRounds == 0 {
		o.SemaphoreRounds = 30
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 50 * time.Millisecond
	}
	return o
}

// FencedCounter is a counter in a store that fences its reads and writes
// with lock terms, as an application guards what it does under a lock:
// every call carries a term, and the store refuses a call whose term is
// lower than the highest it has seen for the key. The Locks part's holders
// each read the counter and write it plus one under their lock's term, as
// two separate calls: only mutual exclusion (or, failing that, the fence)
// keeps an increment from being lost.
type FencedCounter interface {
	// Read returns the counter key's value (0 if it was never written).
	// It fails with an error matching fence.ErrStaleTerm if a term higher
	// than term was seen for key; otherwise it raises the key's highest
	// term to term, in the same atomic operation.
	Read(ctx context.Context, key string, term uint64) (uint64, error)

	// Write sets the counter key to value, fenced with term as Read is,
	// and appends term to the list Accepted returns, in the same atomic
	// operation: nothing is written when the term is refused.
	Write(ctx context.Context, key string, term, value uint64) error

	// Accepted returns the terms of key's accepted writes, in the order
	// the store accepted them.
	Accepted(ctx context.Context, key string) ([]uint64, error)
}

// NewMemoryCounter returns a FencedCounter in the test process: the
// LockOptions.Counter default, for backends that have no fenced store of
// their own at hand. It is safe for concurrent use.
func NewMemoryCounter() FencedCounter { return &memCounter{keys: make(map[string]*memCount)} }

// memCounter is NewMemoryCounter's FencedCounter.
type memCounter struct {
	mu   sync.Mutex
	keys map[string]*memCount
}

// memCount is one key of a memCounter.
type memCount struct {
	value, highest uint64
	accepted       []uint64
}

// fenced returns key's count if term is not stale, raising its highest
// term; the caller holds c.mu.
func (c *memCounter) fenced(key string, term uint64) (*memCount, error) {
	if err := (fence.Token{Election: key, Term: term}).Validate(); err != nil {
		return nil, err
	}
	k := c.keys[key]
	if k == nil {
		k = &memCount{}
		c.keys[key] = k
	}
	if term < k.highest {
		return nil, &fence.StaleTermError{Election: key, Term: term, Highest: k.highest}
	}
	k.highest = term
	return k, nil
}

func (c *memCounter) Read(_ context.Context, key string, term uint64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := c.fenced(key, term)
	if err != nil {
		return 0, err
	}
	return k.value, nil
}

func (c *memCounter) Write(_ context.Context, key string, term, value uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := c.fenced(key, term)
	if err != nil {
		return err
	}
	k.value = value
	k.accepted = append(k.accepted, term)
	return nil
}

func (c *memCounter) Accepted(_ context.Context, key string) ([]uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.keys[key]; k != nil {
		return slices.Clone(k.accepted), nil
	}
	return nil, nil
}

// CheckFencedCounter checks that c fences as the Locks part needs, on keys
// of the test's own: a fresh key reads 0; writes with a term are accepted,
// again with the same term too; a read or a write with a lower term is
// refused with an error matching fence.ErrStaleTerm and changes nothing; a
// read raises the fence (a write with the earlier term is then refused);
// Accepted lists the accepted writes' terms in order; keys are
// independent. The Locks part runs it on its counter before using it.
func CheckFencedCounter(t *testing.T, c FencedCounter) {
	t.Helper()
	ctx := electiontesting.Context(t)
	key := electiontesting.Election(t)
	read := func(term, want uint64) {
		t.Helper()
		if got, err := c.Read(ctx, key, term); err != nil || got != want {
			t.Fatalf("Read with term %d: %d, %v; want %d", term, got, err, want)
		}
	}
	write := func(term, value uint64) {
		t.Helper()
		if err := c.Write(ctx, key, term, value); err != nil {
			t.Fatalf("Write of %d with term %d: %v", value, term, err)
		}
	}
	stale := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, fence.ErrStaleTerm) {
			t.Fatalf("%s: %v, want an error matching fence.ErrStaleTerm", what, err)
		}
	}
	read(5, 0)
	write(5, 1)
	write(5, 2)
	_, err := c.Read(ctx, key, 4)
	stale("Read with a lower term", err)
	stale("Write with a lower term", c.Write(ctx, key, 4, 9))
	read(7, 2)
	stale("Write with the term a Read raised the fence past", c.Write(ctx, key, 5, 9))
	write(7, 3)
	read(7, 3)
	if got, err := c.Accepted(ctx, key); err != nil || !slices.Equal(got, []uint64{5, 5, 7}) {
		t.Fatalf("Accepted: %v, %v; want [5 5 7]", got, err)
	}
	other := key + "-other"
	if got, err := c.Read(ctx, other, 1); err != nil || got != 0 {
		t.Fatalf("Read of another key with term 1: %d, %v; want 0 (keys are independent)", got, err)
	}
	if got, err := c.Accepted(ctx, other); err != nil || len(got) != 0 {
		t.Fatalf("Accepted of a key never written: %v, %v; want none", got, err)
	}
}

// semaphoreSize is the size of the Locks part's semaphores.
const semaphoreSize = 3

// locks is the Locks part: package lock on the backend.
func (s *suite) locks(t *testing.T) {
	start := time.Now()
	t.Cleanup(func() { t.Logf("Locks part: %v", time.Since(start).Round(time.Millisecond)) })
	t.Run("TryAcquireHeld", s.lockTryAcquireHeld)
	t.Run("ReleasedAcquirable", s.lockReleasedAcquirable)
	t.Run("TermsAcrossLockers", s.lockTermsAcrossLockers)
	t.Run("SemaphoreFull", s.semaphoreFull)
	t.Run("Semaphore", s.semaphore)
	t.Run("ReleaseDuringRenewal", s.lockReleaseDuringRenewal)
	// These two run together once the others are done: the first mostly
	// waits for a lease to expire.
	parallel := func(name string, f func(*testing.T)) {
		t.Run(name, func(t *testing.T) { t.Parallel(); f(t) })
	}
	parallel("SemaphoreKilledHolder", s.semaphoreKilledHolder)
	parallel("MutualExclusion", s.mutualExclusion)
}

// lockOptions are the Lockers' options for identity id.
func (s *suite) lockOptions(id string) lock.Options {
	return lock.Options{
		Identity:      id,
		LeaseDuration: s.o.Timing.LeaseDuration,
		RenewDeadline: s.o.Timing.RenewDeadline,
		RetryPeriod:   s.o.Locks.RetryPeriod,
	}
}

// newLocker returns a Locker with identity id on b, closed at the end of
// the test (which fails if closing does, unless mayFailClose).
func (s *suite) newLocker(t *testing.T, b fxelection.Backend, id string, mayFailClose bool) *lock.Locker {
	t.Helper()
	return s.newLockerWith(t, b, s.lockOptions(id), mayFailClose)
}

// newLockerWith is newLocker with options of the caller's.
func (s *suite) newLockerWith(t *testing.T, b fxelection.Backend, opts lock.Options, mayFailClose bool) *lock.Locker {
	t.Helper()
	l, err := lock.New(b, opts)
	if err != nil {
		t.Fatalf("lock.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opts.LeaseDuration+10*time.Second)
		defer cancel()
		if err := l.Close(ctx); err != nil && !mayFailClose {
			t.Errorf("Close of locker %s: %v", opts.Identity, err)
		}
	})
	return l
}

// release releases lk, failing the test if that fails.
func release(t *testing.T, lk *lock.Lock) {
	t.Helper()
	if err := lk.Release(electiontesting.Context(t)); err != nil {
		t.Fatalf("Release of %s: %v", lk.Key(), err)
	}
}

// wantLocked checks that err is ErrLocked wrapping a *HeldError and
// returns the holder it names.
func wantLocked(t *testing.T, err error, what string) fxelection.Lease {
	t.Helper()
	var he *backendkit.HeldError
	if !errors.Is(err, lock.ErrLocked) || !errors.As(err, &he) {
		t.Fatalf("%s: %v, want ErrLocked with a *backendkit.HeldError", what, err)
	}
	return he.Holder
}

// lockTryAcquireHeld: TryAcquire of a held key, by another Locker or by
// the holder's own, is ErrLocked naming the holder and its term.
func (s *suite) lockTryAcquireHeld(t *testing.T) {
	a := s.newLocker(t, s.newBackend(t), "held-a", false)
	b := s.newLocker(t, s.newBackend(t), "held-b", false)
	key := electiontesting.Election(t)
	la, err := a.TryAcquire(electiontesting.Context(t), key)
	if err != nil {
		t.Fatalf("TryAcquire of a free key: %v", err)
	}
	holder := la.Lease().Holder
	if !strings.HasPrefix(holder, "held-a/") || la.Term() == 0 || la.Key() != key || la.Slot() != 0 {
		t.Fatalf("lock: holder %q, term %d, key %q, slot %d; want held-a/…, a term, %q, 0", holder, la.Term(), la.Key(), la.Slot(), key)
	}
	for _, c := range []struct {
		name string
		l    *lock.Locker
	}{{"another Locker", b}, {"the holder's own Locker", a}} {
		lk, err := c.l.TryAcquire(electiontesting.Context(t), key)
		if err == nil {
			release(t, lk)
			t.Fatalf("TryAcquire of a held key by %s succeeded", c.name)
		}
		got := wantLocked(t, err, "TryAcquire of a held key by "+c.name)
		if got.Holder != holder || got.Term != la.Term() {
			t.Fatalf("TryAcquire by %s: holder %q term %d, want %q term %d", c.name, got.Holder, got.Term, holder, la.Term())
		}
	}
	if err := la.Context().Err(); err != nil {
		t.Fatalf("the holder's Context ended: %v", context.Cause(la.Context()))
	}
	release(t, la)
}

// lockReleasedAcquirable: a released lock is free at once: another client's
// single TryAcquire takes it, with a higher term, and the released Lock's
// Context has ended with ErrReleased.
func (s *suite) lockReleasedAcquirable(t *testing.T) {
	a := s.newLocker(t, s.newBackend(t), "rel-a", false)
	b := s.newLocker(t, s.newBackend(t), "rel-b", false)
	key := electiontesting.Election(t)
	la, err := a.Acquire(electiontesting.Context(t), key)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	release(t, la)
	if cause := context.Cause(la.Context()); !errors.Is(cause, lock.ErrReleased) {
		t.Fatalf("released Lock's Context: cause %v, want ErrReleased", cause)
	}
	lb, err := b.TryAcquire(electiontesting.Context(t), key)
	if err != nil {
		t.Fatalf("TryAcquire right after the release: %v, want the lock", err)
	}
	if lb.Term() <= la.Term() {
		t.Fatalf("term %d after the release of term %d, want higher", lb.Term(), la.Term())
	}
	release(t, lb)
}

// lockTermsAcrossLockers: two Lockers taking one key in turn get strictly
// increasing terms, and each Lock's Context carries its term for fencing.
func (s *suite) lockTermsAcrossLockers(t *testing.T) {
	lockers := []*lock.Locker{
		s.newLocker(t, s.newBackend(t), "turn-a", false),
		s.newLocker(t, s.newBackend(t), "turn-b", false),
	}
	key := electiontesting.Election(t)
	var terms []uint64
	for i := range 6 {
		lk, err := lockers[i%2].Acquire(electiontesting.Context(t), key)
		if err != nil {
			t.Fatalf("Acquire %d: %v", i, err)
		}
		tok, err := fence.FromContext(lk.Context())
		if err != nil || tok != (fence.Token{Election: key, Term: lk.Term()}) {
			t.Errorf("fencing token of the Lock's Context: %+v, %v; want %s/%d", tok, err, key, lk.Term())
		}
		terms = append(terms, lk.Term())
		release(t, lk)
	}
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Fatalf("terms of alternating Lockers %v, want strictly increasing", terms)
		}
	}
}

// semaphoreFull: three Lockers take the three slots of a semaphore (one
// each); a fourth's TryAcquireSemaphore is ErrLocked; once one slot is
// released, the fourth takes that slot at once, with a higher term.
func (s *suite) semaphoreFull(t *testing.T) {
	name := electiontesting.Election(t)
	held := make([]*lock.Lock, semaphoreSize)
	seen := map[int]bool{}
	for i := range held {
		l := s.newLocker(t, s.newBackend(t), fmt.Sprint("full-", i), false)
		lk, err := l.TryAcquireSemaphore(electiontesting.Context(t), name, semaphoreSize)
		if err != nil {
			t.Fatalf("TryAcquireSemaphore %d of %d: %v", i+1, semaphoreSize, err)
		}
		if lk.Slot() < 0 || lk.Slot() >= semaphoreSize || seen[lk.Slot()] || lk.Key() != name {
			t.Fatalf("slot %d of %q (taken: %v), want a free one of %d", lk.Slot(), lk.Key(), seen, semaphoreSize)
		}
		seen[lk.Slot()] = true
		held[i] = lk
	}
	late := s.newLocker(t, s.newBackend(t), "full-late", false)
	lk, err := late.TryAcquireSemaphore(electiontesting.Context(t), name, semaphoreSize)
	if err == nil {
		t.Fatalf("TryAcquireSemaphore with every slot held took slot %d", lk.Slot())
	}
	got := wantLocked(t, err, "TryAcquireSemaphore with every slot held")
	if !strings.HasPrefix(got.Holder, "full-") {
		t.Fatalf("the HeldError names holder %q, want one of the slots' holders", got.Holder)
	}
	freed := held[1]
	release(t, freed)
	lk, err = late.TryAcquireSemaphore(electiontesting.Context(t), name, semaphoreSize)
	if err != nil {
		t.Fatalf("TryAcquireSemaphore right after slot %d was released: %v", freed.Slot(), err)
	}
	if lk.Slot() != freed.Slot() || lk.Term() <= freed.Term() {
		t.Fatalf("took slot %d term %d after slot %d term %d was released, want that slot with a higher term", lk.Slot(), lk.Term(), freed.Slot(), freed.Term())
	}
	release(t, lk)
	for _, h := range []*lock.Lock{held[0], held[2]} {
		if err := h.Context().Err(); err != nil {
			t.Errorf("holder of slot %d lost it: %v", h.Slot(), context.Cause(h.Context()))
		}
		release(t, h)
	}
}

// errKilled is every call's error on a killed backend.
var errKilled = errors.New("electiontest: backend killed")

// killable is a backend a test can cut off as if its process had died:
// once killed, every call fails without reaching the store. It hides the
// wrapped backend's optional interfaces (push, batches).
type killable struct {
	fxelection.Backend
	mu        sync.Mutex
	dead      bool
	lastWrite time.Time // start of the last Acquire or Renew sent to the store
}

// enter lets a call through unless the backend was killed, noting when a
// write started.
func (k *killable) enter(write bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return errKilled
	}
	if write {
		k.lastWrite = time.Now()
	}
	return nil
}

// kill cuts the backend off and returns when the last Acquire or Renew
// that reached the store started: no lease it holds can expire before
// LeaseDuration after that.
func (k *killable) kill() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	return k.lastWrite
}

func (k *killable) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := k.enter(true); err != nil {
		return fxelection.Lease{}, err
	}
	return k.Backend.Acquire(ctx, req)
}

func (k *killable) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if err := k.enter(true); err != nil {
		return fxelection.Lease{}, err
	}
	return k.Backend.Renew(ctx, l)
}

func (k *killable) Release(ctx context.Context, l fxelection.Lease) error {
	if err := k.enter(false); err != nil {
		return err
	}
	return k.Backend.Release(ctx, l)
}

func (k *killable) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := k.enter(false); err != nil {
		return fxelection.Lease{}, err
	}
	return k.Backend.Get(ctx, election)
}

// semaphoreKilledHolder: the holder of one slot of a full semaphore is
// killed (its backend cut off: no renewal, no release reaches the store).
// Another client's TryAcquireSemaphore loop takes exactly that slot (the
// other two holders keep theirs), with a higher term, once the lease has
// expired: not before LeaseDuration after the last write the killed holder
// sent (a bound delays can only make later), and within a generous limit.
// The killed holder's Context ends with ErrLost.
func (s *suite) semaphoreKilledHolder(t *testing.T) {
	name := electiontesting.Election(t)
	lease := s.o.Timing.LeaseDuration
	victimBackend := &killable{Backend: s.newBackend(t)}
	victim := s.newLocker(t, victimBackend, "killed", true) // its Close cannot release
	vl, err := victim.TryAcquireSemaphore(electiontesting.Context(t), name, semaphoreSize)
	if err != nil {
		t.Fatalf("TryAcquireSemaphore of a free semaphore: %v", err)
	}
	var others []*lock.Lock
	for i := range semaphoreSize - 1 {
		// Twice the lease and renew deadline: a busy machine delaying
		// their renewals must not free their slots instead.
		opts := s.lockOptions(fmt.Sprint("alive-", i))
		opts.LeaseDuration, opts.RenewDeadline = 2*opts.LeaseDuration, 2*opts.RenewDeadline
		l := s.newLockerWith(t, s.newBackend(t), opts, false)
		lk, err := l.TryAcquireSemaphore(electiontesting.Context(t), name, semaphoreSize)
		if err != nil {
			t.Fatalf("TryAcquireSemaphore %d of %d: %v", i+2, semaphoreSize, err)
		}
		others = append(others, lk)
	}
	waiter := s.newLocker(t, s.newBackend(t), "waiter", false)

	lastWrite := victimBackend.kill()
	limit := 3*lease + 15*time.Second
	deadline := time.Now().Add(limit)
	attempts := 0
	var got *lock.Lock
	for {
		attempts++
		lk, err := waiter.TryAcquireSemaphore(electiontesting.Context(t), name, semaphoreSize)
		if err == nil {
			got = lk
			break
		}
		wantLocked(t, err, "TryAcquireSemaphore while the killed holder's slot may be live")
		if time.Now().After(deadline) {
			t.Fatalf("the killed holder's slot was not free %v after the kill (LeaseDuration %v; %d attempts)", limit, lease, attempts)
		}
		time.Sleep(s.o.Locks.RetryPeriod)
	}
	took := time.Since(lastWrite)
	t.Logf("slot %d free %v after the killed holder's last write (LeaseDuration %v, %d attempts)", got.Slot(), took.Round(time.Millisecond), lease, attempts)
	if took < lease {
		t.Errorf("the killed holder's slot was taken %v after its last write, before its LeaseDuration %v", took, lease)
	}
	if got.Slot() != vl.Slot() {
		for _, o := range others {
			if o.Slot() == got.Slot() && o.Context().Err() != nil {
				t.Fatalf("took slot %d, whose live holder lost it: %v", got.Slot(), context.Cause(o.Context()))
			}
		}
		t.Fatalf("took slot %d, want the killed holder's slot %d", got.Slot(), vl.Slot())
	}
	if got.Term() <= vl.Term() {
		t.Errorf("slot %d: term %d after the killed holder's %d, want higher", got.Slot(), got.Term(), vl.Term())
	}
	select {
	case <-vl.Context().Done():
		if cause := context.Cause(vl.Context()); !errors.Is(cause, lock.ErrLost) {
			t.Errorf("the killed holder's Context ended with %v, want ErrLost", cause)
		}
	case <-time.After(s.o.Timing.RenewDeadline + 10*time.Second):
		t.Errorf("the killed holder's Context has not ended %v after its slot was taken", s.o.Timing.RenewDeadline+10*time.Second)
	}
	for _, o := range append(others, got) {
		if err := o.Context().Err(); err != nil {
			t.Errorf("holder of slot %d lost it: %v", o.Slot(), context.Cause(o.Context()))
		}
		release(t, o)
	}
}

// progressContext returns a context for a run of lock acquisitions that
// ends only when the run stalls: when no acquisition has completed for
// stall (progress reports one). A busy machine slows every acquisition but
// stops none, so the run's length is no failure; a lock nobody can take
// is. The run is otherwise bounded by the test binary's own timeout.
func progressContext(t *testing.T, stall time.Duration) (ctx context.Context, progress func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	tick := make(chan struct{}, 1)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		timer := time.NewTimer(stall)
		defer timer.Stop()
		for {
			select {
			case <-tick:
				timer.Reset(stall)
			case <-timer.C:
				cancel(fmt.Errorf("no acquisition completed for %v", stall))
				return
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-stopped
		cancel(nil)
	})
	return ctx, func() {
		select {
		case tick <- struct{}{}:
		default:
		}
	}
}

// stallBound is how long a run of contended acquisitions may go without
// completing one before it counts as stuck: a lock released is taken at
// the next poll (1.2 × RetryPeriod) at the latest, one that expired
// instead after LeaseDuration more; four times that, and at least a
// minute, is slack for a busy machine and slow store calls.
func (s *suite) stallBound() time.Duration {
	tm := s.o.Timing
	return max(time.Minute, 4*(tm.LeaseDuration+tm.RetryPeriod*6/5))
}

// mutualExclusion: Clients Lockers, each on a backend of its own, take one
// key Acquisitions times each; every holder reads a fenced counter and
// writes it plus one, both under its lock's term. Mutual exclusion means
// every increment counts and no holder is ever stale: the counter ends at
// Clients × Acquisitions, every write was accepted (a refused one is a
// failure: without faults no holder should be stale), the store accepted
// them with strictly increasing terms, exactly the locks' terms, and no
// two holders were ever in the critical section at once in this process.
func (s *suite) mutualExclusion(t *testing.T) {
	o := s.o.Locks
	counter := NewMemoryCounter()
	if o.Counter != nil {
		counter = o.Counter(t)
	} else {
		t.Log("LockOptions.Counter not set: the holders write through an in-process fenced counter")
	}
	CheckFencedCounter(t, counter)
	key := electiontesting.Election(t)
	lockers := make([]*lock.Locker, o.Clients)
	for i := range lockers {
		lockers[i] = s.newLocker(t, s.newBackend(t), fmt.Sprint("mx-", i), false)
	}
	ctx, progress := progressContext(t, s.stallBound())
	var (
		inside   atomic.Int32
		accepted atomic.Int64
		mu       sync.Mutex
		terms    []uint64               // every Lock's term
		client   = make(map[uint64]int) // which client held each term
		wg       sync.WaitGroup
	)
	start := time.Now()
	for i, l := range lockers {
		wg.Go(func() {
			for j := range o.Acquisitions {
				lk, err := l.Acquire(ctx, key)
				if err != nil {
					t.Errorf("client %d, acquisition %d: %v", i, j, err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("client %d: %d holders of one lock at once", i, n)
				}
				term := lk.Term()
				mu.Lock()
				terms = append(terms, term)
				client[term] = i
				mu.Unlock()
				err = increment(ctx, counter, key, term)
				inside.Add(-1)
				lost := context.Cause(lk.Context())
				if rerr := lk.Release(ctx); rerr != nil {
					t.Errorf("client %d: Release: %v", i, rerr)
				}
				switch {
				case errors.Is(err, fence.ErrStaleTerm):
					t.Errorf("client %d: the fenced store refused term %d although no fault was injected: %v", i, term, err)
					return
				case err != nil:
					t.Errorf("client %d: fenced counter: %v", i, err)
					return
				}
				accepted.Add(1)
				progress()
				if lost != nil && !errors.Is(lost, lock.ErrReleased) {
					t.Errorf("client %d: the lock (term %d) was lost while held, with no fault injected: %v", i, term, lost)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	want := o.Clients * o.Acquisitions
	slices.Sort(terms)
	handovers := 0
	for i := 1; i < len(terms); i++ {
		if client[terms[i]] != client[terms[i-1]] {
			handovers++
		}
	}
	t.Logf("%d clients × %d acquisitions: %v (%v per acquisition), the lock changed clients %d times",
		o.Clients, o.Acquisitions, took.Round(time.Millisecond), (took / time.Duration(want)).Round(10*time.Microsecond), handovers)
	if t.Failed() {
		return
	}
	got, err := counter.Accepted(ctx, key)
	if err != nil {
		t.Fatalf("Accepted: %v", err)
	}
	if len(got) != want || accepted.Load() != int64(want) {
		t.Fatalf("the store accepted %d writes, the holders saw %d accepted, want %d", len(got), accepted.Load(), want)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("accepted write %d has term %d after %d: terms must strictly increase", i, got[i], got[i-1])
		}
	}
	if !slices.Equal(terms, got) {
		t.Fatalf("the accepted writes' terms are not the locks' terms")
	}
	value, err := counter.Read(ctx, key, got[len(got)-1])
	if err != nil {
		t.Fatalf("final Read: %v", err)
	}
	if value != uint64(want) {
		t.Fatalf("counter = %d after %d increments under the lock", value, want)
	}
}

// increment reads the counter and writes it plus one, both fenced with
// term.
func increment(ctx context.Context, c FencedCounter, key string, term uint64) error {
	v, err := c.Read(ctx, key, term)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if err := c.Write(ctx, key, term, v+1); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// semaphore: SemaphoreClients Lockers take a slot of one semaphore of 3
// SemaphoreRounds times each, hold it a moment and release it: never more
// than 3 holders at once (counted in this process: after Acquire, before
// Release), every slot in range, and each slot's terms strictly increase
// in the order its holders took it.
func (s *suite) semaphore(t *testing.T) {
	o := s.o.Locks
	name := electiontesting.Election(t)
	lockers := make([]*lock.Locker, o.SemaphoreClients)
	for i := range lockers {
		lockers[i] = s.newLocker(t, s.newBackend(t), fmt.Sprint("sem-", i), false)
	}
	ctx, progress := progressContext(t, s.stallBound())
	var (
		holders, most atomic.Int32
		mu            sync.Mutex
		slotTerms     [semaphoreSize][]uint64
		taken         int
		wg            sync.WaitGroup
	)
	start := time.Now()
	for i, l := range lockers {
		wg.Go(func() {
			for range o.SemaphoreRounds {
				lk, err := l.AcquireSemaphore(ctx, name, semaphoreSize)
				if err != nil {
					t.Errorf("client %d: AcquireSemaphore: %v", i, err)
					return
				}
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n > semaphoreSize {
					t.Errorf("client %d: %d holders of a semaphore of %d", i, n, semaphoreSize)
				}
				slot := lk.Slot()
				if slot < 0 || slot >= semaphoreSize || lk.Key() != name {
					t.Errorf("client %d: slot %d of %q, want 0 to %d of %q", i, slot, lk.Key(), semaphoreSize-1, name)
				} else {
					mu.Lock()
					slotTerms[slot] = append(slotTerms[slot], lk.Term())
					taken++
					mu.Unlock()
				}
				time.Sleep(rand.N(5 * time.Millisecond)) // hold it a moment
				holders.Add(-1)
				if err := lk.Release(ctx); err != nil {
					t.Errorf("client %d: Release: %v", i, err)
				}
				progress()
			}
		})
	}
	wg.Wait()
	want := o.SemaphoreClients * o.SemaphoreRounds
	t.Logf("%d clients × %d rounds on a semaphore of %d: %v, at most %d holders at once, slots taken %d/%d/%d times",
		o.SemaphoreClients, o.SemaphoreRounds, semaphoreSize, time.Since(start).Round(time.Millisecond), most.Load(),
		len(slotTerms[0]), len(slotTerms[1]), len(slotTerms[2]))
	if taken != want && !t.Failed() {
		t.Errorf("%d slots taken, want %d", taken, want)
	}
	for slot, terms := range slotTerms {
		for i := 1; i < len(terms); i++ {
			if terms[i] <= terms[i-1] {
				t.Errorf("slot %d: term %d taken after term %d, want strictly increasing", slot, terms[i], terms[i-1])
				break
			}
		}
	}
}

// lockReleaseDuringRenewal: a lock released at random points of its
// renewal cycle is free in the store once Release returns, every time,
// also when Release lands during a renewal (which Release lets finish: a
// renewal cut short could still be applied by the store, and a backend
// that matches the last write on release, PostgreSQL, would then free
// nothing and leave the lock held for a whole lease).
func (s *suite) lockReleaseDuringRenewal(t *testing.T) {
	b := s.newBackend(t)
	l := s.newLocker(t, b, "release-during-renewal", false)
	key := electiontesting.Election(t)
	const rounds = 60
	for i := range rounds {
		lk, err := l.TryAcquire(electiontesting.Context(t), key)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		time.Sleep(rand.N(2 * s.o.Locks.RetryPeriod))
		release(t, lk)
		got, err := b.Get(electiontesting.Context(t), key)
		switch {
		case errors.Is(err, backendkit.ErrNoLease):
		case err != nil:
			t.Fatalf("round %d: Get after Release: %v", i, err)
		case got.Holder == lk.Lease().Holder && got.Term == lk.Term():
			t.Fatalf("round %d: the store still shows the released lock (term %d, expiring %v)", i, got.Term, got.ExpiresAt)
		}
	}
}
