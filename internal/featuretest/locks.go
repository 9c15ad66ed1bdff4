package featuretest

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
	"github.com/fxelection/fxelection/internal/fencedcounter"
)

// semaphoreSize is the size of the lock cases' semaphores.
const semaphoreSize = 3

// lockOptions are the Lockers' options for identity id.
func (s *env) lockOptions(id string) lock.Options {
	return lock.Options{
		Identity: id,
		Timing: fxelection.Timing{
			LeaseDuration: s.o.Timing.LeaseDuration,
			RenewDeadline: s.o.Timing.RenewDeadline,
			RetryPeriod:   s.o.Locks.RetryPeriod,
		},
	}
}

// newLocker returns a Locker with identity id on b, closed at the end of
// the test (which fails if closing does, unless mayFailClose).
func (s *env) newLocker(t *testing.T, b fxelection.Backend, id string, mayFailClose bool) *lock.Locker {
	t.Helper()
	return s.newLockerWith(t, b, s.lockOptions(id), mayFailClose)
}

// newLockerWith is newLocker with options of the caller's.
func (s *env) newLockerWith(t *testing.T, b fxelection.Backend, opts lock.Options, mayFailClose bool) *lock.Locker {
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
func (s *env) lockTryAcquireHeld(t *testing.T) {
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
func (s *env) lockReleasedAcquirable(t *testing.T) {
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
func (s *env) lockTermsAcrossLockers(t *testing.T) {
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
func (s *env) semaphoreFull(t *testing.T) {
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
var errKilled = errors.New("featuretest: backend killed")

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
func (s *env) semaphoreKilledHolder(t *testing.T) {
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
func (s *env) stallBound() time.Duration {
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
func (s *env) mutualExclusion(t *testing.T) {
	o := s.o.Locks
	counter := s.o.Counter(t)
	fencedcounter.Check(t, counter)
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
func increment(ctx context.Context, c fencedcounter.Counter, key string, term uint64) error {
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
func (s *env) semaphore(t *testing.T) {
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
