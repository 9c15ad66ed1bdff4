package electiontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// Options tune RunBackendTests for one backend. The zero value suits a
// backend with server-side TTLs of any length, except that PutGarbage and
// DeleteRecord are required: the suite fails without them.
type Options struct {
	// TTL is the short lease duration used by expiry tests. Default: 500ms.
	// Backends with a minimum lease length (Azure Blob: 15s) set it higher.
	TTL time.Duration

	// PutGarbage writes a value the backend cannot decode as election's
	// record, expiring after ttl where the store supports it, as a foreign
	// program might. Required: the suite fails without it, since every
	// backend must survive foreign records.
	PutGarbage func(t *testing.T, election string, ttl time.Duration)

	// DeleteRecord deletes everything the store keeps for election (the
	// lease record and any term counter) behind the backends' backs, as an
	// operator cleaning a table or a bucket might. Required: the suite fails
	// without it, since every backend must keep terms rising after that.
	DeleteRecord func(t *testing.T, election string)

	// Recreate, if set, deletes and re-creates the store's namespace that
	// holds election (a bucket, a key prefix) behind the backends' backs,
	// as an operator or a server restarted without its data would: stores
	// whose versions then start again must still never let a follower take
	// a new record for the one it watched. Default: DeleteRecord.
	Recreate func(t *testing.T, election string)

	// GarbageNeverExpires says the store cannot expire a foreign record
	// (no TTL); the suite then checks only that it is never taken over.
	GarbageNeverExpires bool

	// Candidates is how many candidates race in the concurrency test.
	// Default: 50.
	Candidates int

	// Rounds is how many rounds they race. Default: 20.
	Rounds int

	// Timing is the smoke part's electors' and Lockers' timing (the
	// Lockers' RetryPeriod is 50ms). Zero fields default to LeaseDuration
	// 3s, RenewDeadline 2s, RetryPeriod 500ms; set LeaseDuration for
	// backends with a minimum lease length.
	Timing Timing

	// StoreDown, if set, adds the Contract/StoreDown case, which checks
	// that while the store is down every operation is a store failure
	// (never ErrLeaseHeld, ErrLeaseLost or ErrNoLease, which would make an
	// elector give up a lease it may still hold, or believe one free) and,
	// if the store can restart, that the holder renews its lease with its
	// term afterwards. It returns a store of the test's own: the case stops
	// it, so it must not be the one newBackend uses.
	StoreDown func(t *testing.T) DownStore

	// Linearizable tunes the Contract/Linearizable case (how many clients,
	// elections, how long). The zero value is a run of a few seconds.
	Linearizable LinearizableOptions

	// PushDisabled says the backends under test are configured not to push
	// wake-ups although they implement backendkit.Notifier (their
	// Subscribe does nothing): cases that wait for a wake-up then check
	// nothing about it.
	PushDisabled bool
}

// DownStore is a store of a test's own for the StoreDown case.
type DownStore struct {
	// Backend is a backend on the store.
	Backend fxelection.Backend
	// Kill stops the store as a crash would.
	Kill func() error
	// Restart, if set, starts the store again on the same address with
	// the data it had; the case then checks that the lease survived.
	Restart func() error
	// RenewWrites says a renewal writes a new version of the record (an
	// S3 ETag); the case then checks that the renewal after the restart
	// returns a new Version.
	RenewWrites bool
}

// Timing is an elector's timing (fxelection.Config's fields of the same
// names).
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// WithDefaults returns t with its zero fields set: LeaseDuration 3s,
// RenewDeadline two thirds of it, RetryPeriod a sixth of it.
func (t Timing) WithDefaults() Timing {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = 3 * time.Second
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = t.LeaseDuration * 2 / 3
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = t.LeaseDuration / 6
	}
	return t
}

func (o Options) withDefaults() Options {
	if o.TTL == 0 {
		o.TTL = 500 * time.Millisecond
	}
	if o.Candidates == 0 {
		o.Candidates = 50
	}
	if o.Rounds == 0 {
		o.Rounds = 20
	}
	o.Timing = o.Timing.WithDefaults()
	return o
}

// NewBackend returns a backend on the store under test. Each call should
// return a separate client (as a separate process would have) on the same
// store; the suite calls it many times.
type NewBackend func(t *testing.T) fxelection.Backend

// RunBackendTests runs the conformance suite against the backends newBackend
// makes: the storage contract first (atomicity, terms, incarnations,
// expiry, push, foreign records, linearizability, and the optional
// interfaces the backend implements), then a smoke part: real electors
// handing over (EndToEnd/HandOverOnStop) and package lock's Lockers
// taking, contending for and releasing a lock with its fencing token
// (Locks/Smoke), and releasing it during a renewal
// (Locks/ReleaseDuringRenewal). Each test uses its own election names, so
// one store serves all.
//
// Tests that mostly wait for leases to expire run in parallel with each
// other (t.Parallel), after the ones that change the store as a whole
// (Options.Recreate, Options.StoreDown) have ended. A case that does not
// apply to the backend (RenewBatch without backendkit.BatchRenewer,
// AcquireBatch without backendkit.BatchAcquirer) is not run, and the
// parent test logs why, rather than being reported as skipped.
func RunBackendTests(t *testing.T, newBackend NewBackend, opts Options) {
	opts = opts.withDefaults()
	s := &suite{newBackend: newBackend, o: opts}
	waits := func(t *testing.T, name string, f func(*testing.T)) {
		t.Run(name, func(t *testing.T) { t.Parallel(); f(t) })
	}
	t.Run("Contract", func(t *testing.T) {
		t.Run("AcquireWhenFree", s.acquireWhenFree)
		t.Run("RefusedWhileHeld", s.refusedWhileHeld)
		t.Run("ReacquireSameIdentity", s.reacquireSameIdentity)
		t.Run("ReacquireSameIncarnation", s.reacquireSameIncarnation)
		t.Run("NewIncarnationHigherTerm", s.newIncarnationHigherTerm)
		t.Run("TermGrowsAfterOwnRelease", s.termGrowsAfterOwnRelease)
		t.Run("RenewByHolder", s.renewByHolder)
		waits(t, "RenewRefusedAfterTakeover", s.renewRefusedAfterTakeover)
		t.Run("ReleaseOnlyOwn", s.releaseOnlyOwn)
		t.Run("ReleaseLostLease", s.releaseLost)
		t.Run("GetShowsHolder", s.getShowsHolder)
		waits(t, "TermMonotonic", s.termMonotonic)
		t.Run("TermSurvivesDelete", s.termSurvivesDelete)
		t.Run("TermAboveRepeatedDeletes", s.termAboveRepeatedDeletes)
		waits(t, "ExpiryLetsAnotherAcquire", s.expiry)
		if opts.Recreate != nil {
			t.Run("RecreatedStore", s.recreatedStore) // re-creates the whole store
		} else {
			waits(t, "RecreatedStore", s.recreatedStore)
		}
		t.Run("RacingCandidates", s.racing)
		t.Run("Linearizable", s.linearizable)
		t.Run("IndependentElections", s.independent)
		t.Run("CancelledContext", s.cancelled)
		waits(t, "GarbageRecord", s.garbage)
		if _, ok := s.newBackend(t).(backendkit.BatchRenewer); ok {
			t.Run("RenewBatch", s.renewBatch)
		} else {
			t.Log("RenewBatch not run: the backend does not implement backendkit.BatchRenewer (optional)")
		}
		if _, ok := s.newBackend(t).(backendkit.BatchAcquirer); ok {
			t.Run("AcquireBatch", s.acquireBatch)
		} else {
			t.Log("AcquireBatch not run: the backend does not implement backendkit.BatchAcquirer (optional)")
		}
		if _, ok := s.newBackend(t).(backendkit.Transferer); ok {
			t.Run("Transfer", s.transfer)
		} else {
			t.Log("Transfer not run: the backend does not implement backendkit.Transferer (optional)")
		}
		if opts.StoreDown != nil {
			t.Run("StoreDown", s.storeDown) // stops the whole store
		}
	})
	t.Run("Locks", func(t *testing.T) {
		t.Run("Smoke", s.lockSmoke)
		t.Run("ReleaseDuringRenewal", s.lockReleaseDuringRenewal)
	})
	t.Run("EndToEnd", func(t *testing.T) {
		t.Run("HandOverOnStop", s.handOverOnStop)
	})
}

type suite struct {
	newBackend NewBackend
	o          Options
}

func (s *suite) req(election, id string, d time.Duration) backendkit.AcquireRequest {
	if d == 0 {
		d = time.Minute
	}
	return backendkit.AcquireRequest{Election: election, Identity: id, Metadata: map[string]string{"addr": id + ":8080"}, Duration: d}
}

func mustAcquire(t *testing.T, b fxelection.Backend, r backendkit.AcquireRequest) fxelection.Lease {
	t.Helper()
	l, err := b.Acquire(electiontesting.Context(t), r)
	if err != nil {
		t.Fatalf("Acquire(%s as %s): %v", r.Election, r.Identity, err)
	}
	return l
}

func wantHeld(t *testing.T, err error, holder string) *backendkit.HeldError {
	t.Helper()
	var he *backendkit.HeldError
	if !errors.As(err, &he) || !errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("want *HeldError matching ErrLeaseHeld, got %v", err)
	}
	if he.Holder.Holder != holder {
		t.Fatalf("HeldError holder = %q, want %q", he.Holder.Holder, holder)
	}
	return he
}

func (s *suite) acquireWhenFree(t *testing.T) {
	b, e := s.newBackend(t), electiontesting.Election(t)
	l := mustAcquire(t, b, s.req(e, "a", 0))
	if l.Holder != "a" || l.Election != e || l.Term == 0 || l.Metadata["addr"] != "a:8080" || l.Duration != time.Minute {
		t.Fatalf("lease = %+v", l)
	}
}

func (s *suite) refusedWhileHeld(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	la := mustAcquire(t, a, s.req(e, "a", 0))
	_, err := b.Acquire(electiontesting.Context(t), s.req(e, "b", 0))
	he := wantHeld(t, err, "a")
	if he.Holder.Term != la.Term || he.Holder.Metadata["addr"] != "a:8080" {
		t.Fatalf("held error lease = %+v, want term %d with metadata", he.Holder, la.Term)
	}
}

// reacquireSameIdentity: a request that names no incarnation (as the
// Elector's hand-over hint) keeps the holder's term.
func (s *suite) reacquireSameIdentity(t *testing.T) {
	e := electiontesting.Election(t)
	la := mustAcquire(t, s.newBackend(t), s.req(e, "a", 0))
	// A restarted process with the same identity and a new client.
	la2 := mustAcquire(t, s.newBackend(t), s.req(e, "a", 0))
	if la2.Term != la.Term || la2.Holder != "a" {
		t.Fatalf("re-acquire: term %d holder %q, want term %d holder a", la2.Term, la2.Holder, la.Term)
	}
	if _, err := s.newBackend(t).Acquire(electiontesting.Context(t), s.req(e, "b", 0)); err == nil {
		t.Fatal("b acquired a lease a re-acquired")
	}
}

func (s *suite) renewByHolder(t *testing.T) {
	b, e := s.newBackend(t), electiontesting.Election(t)
	l := mustAcquire(t, b, s.req(e, "a", 0))
	for range 3 {
		l2, err := b.Renew(electiontesting.Context(t), l)
		if err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if l2.Term != l.Term || l2.Holder != "a" {
			t.Fatalf("renewed lease %+v, want term %d", l2, l.Term)
		}
		l = l2
	}
}

// waitAcquire retries Acquire until it succeeds or limit passes; it fails
// the test on store failures.
func (s *suite) waitAcquire(t *testing.T, b fxelection.Backend, r backendkit.AcquireRequest, limit time.Duration) fxelection.Lease {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		l, err := b.Acquire(electiontesting.Context(t), r)
		if err == nil {
			return l
		}
		if !errors.Is(err, backendkit.ErrLeaseHeld) {
			t.Fatalf("Acquire: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not acquired within %v: %v", limit, err)
		}
		time.Sleep(s.o.TTL / 10)
	}
}

// expiryLimit is how long a takeover after expiry may take: the TTL, twice
// over for observed-time backends, plus slack for a busy machine.
func (s *suite) expiryLimit() time.Duration { return 3*s.o.TTL + 5*time.Second }

func (s *suite) renewRefusedAfterTakeover(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	la := mustAcquire(t, a, s.req(e, "a", s.o.TTL))
	lb := s.waitAcquire(t, b, s.req(e, "b", time.Minute), s.expiryLimit())
	if lb.Term <= la.Term {
		t.Fatalf("takeover term %d not above %d", lb.Term, la.Term)
	}
	if _, err := a.Renew(electiontesting.Context(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew after takeover: %v, want ErrLeaseLost", err)
	}
	got, err := b.Get(electiontesting.Context(t), e)
	if err != nil || got.Holder != "b" || got.Term != lb.Term {
		t.Fatalf("after refused renew Get = %+v, %v; want b's lease", got, err)
	}
}

func (s *suite) releaseOnlyOwn(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	la := mustAcquire(t, a, s.req(e, "a", 0))
	forged := la
	forged.Holder = "b"
	if err := b.Release(electiontesting.Context(t), forged); err != nil {
		t.Fatalf("Release of a lease b does not hold: %v, want nil", err)
	}
	if got, err := a.Get(electiontesting.Context(t), e); err != nil || got.Holder != "a" {
		t.Fatalf("b's release removed a's lease: %+v, %v", got, err)
	}
	stale := la
	stale.Term = la.Term + 1000
	if err := a.Release(electiontesting.Context(t), stale); err != nil {
		t.Fatalf("Release with a wrong term: %v", err)
	}
	if got, err := a.Get(electiontesting.Context(t), e); err != nil || got.Holder != "a" {
		t.Fatalf("release with a wrong term removed the lease: %+v, %v", got, err)
	}
	if err := a.Release(electiontesting.Context(t), la); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := a.Get(electiontesting.Context(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after release: %v, want ErrNoLease", err)
	}
	lb := mustAcquire(t, b, s.req(e, "b", 0))
	if lb.Term <= la.Term {
		t.Fatalf("term after release %d, want > %d", lb.Term, la.Term)
	}
}

func (s *suite) releaseLost(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	la := mustAcquire(t, a, s.req(e, "a", 0))
	if err := a.Release(electiontesting.Context(t), la); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := a.Release(electiontesting.Context(t), la); err != nil {
		t.Fatalf("second Release: %v, want nil", err)
	}
	lb := mustAcquire(t, b, s.req(e, "b", 0))
	if err := a.Release(electiontesting.Context(t), la); err != nil {
		t.Fatalf("Release of a lease now held by b: %v, want nil", err)
	}
	if got, err := b.Get(electiontesting.Context(t), e); err != nil || got.Holder != "b" || got.Term != lb.Term {
		t.Fatalf("a's stale release disturbed b: %+v, %v", got, err)
	}
}

func (s *suite) getShowsHolder(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	if _, err := b.Get(electiontesting.Context(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get of an unused election: %v, want ErrNoLease", err)
	}
	la := mustAcquire(t, a, s.req(e, "a", 0))
	got, err := b.Get(electiontesting.Context(t), e)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Holder != "a" || got.Term != la.Term || got.Metadata["addr"] != "a:8080" || got.Election != e {
		t.Fatalf("Get = %+v, want a's lease term %d", got, la.Term)
	}
	// Get changes nothing.
	if _, err := b.Get(electiontesting.Context(t), e); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Renew(electiontesting.Context(t), la); err != nil {
		t.Fatalf("Renew after Get: %v", err)
	}
}

func (s *suite) termMonotonic(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	var terms []uint64
	la := mustAcquire(t, a, s.req(e, "a", 0))
	terms = append(terms, la.Term)
	la, err := a.Renew(electiontesting.Context(t), la)
	if err != nil || la.Term != terms[0] {
		t.Fatalf("renew changed term: %d, %v", la.Term, err)
	}
	if err := a.Release(electiontesting.Context(t), la); err != nil {
		t.Fatal(err)
	}
	lb := mustAcquire(t, b, s.req(e, "b", 0))
	terms = append(terms, lb.Term)
	if err := b.Release(electiontesting.Context(t), lb); err != nil {
		t.Fatal(err)
	}
	la = mustAcquire(t, a, s.req(e, "a", s.o.TTL))
	terms = append(terms, la.Term)
	lb = s.waitAcquire(t, b, s.req(e, "b", 0), s.expiryLimit())
	terms = append(terms, lb.Term)
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Fatalf("terms %v not strictly increasing", terms)
		}
	}
}

// termSurvivesDelete deletes the election's records out of band while a
// leader holds the lease: the leader's next renewal fails with ErrLeaseLost,
// Get reports no lease, and the next holder's term is higher than every term
// handed out before.
func (s *suite) termSurvivesDelete(t *testing.T) {
	if s.o.DeleteRecord == nil {
		t.Fatal("Options.DeleteRecord is required: every backend must keep terms rising after an out-of-band delete")
	}
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	var highest uint64
	for _, c := range []struct {
		b  fxelection.Backend
		id string
	}{{a, "a"}, {b, "b"}, {a, "a"}} {
		l := mustAcquire(t, c.b, s.req(e, c.id, 0))
		highest = max(highest, l.Term)
		if err := c.b.Release(electiontesting.Context(t), l); err != nil {
			t.Fatal(err)
		}
	}
	la := mustAcquire(t, a, s.req(e, "a", 0))
	highest = max(highest, la.Term)

	s.o.DeleteRecord(t, e)

	if _, err := a.Renew(electiontesting.Context(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew after the record was deleted: %v, want ErrLeaseLost", err)
	}
	if _, err := b.Get(electiontesting.Context(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after the record was deleted: %v, want ErrNoLease", err)
	}
	lb := mustAcquire(t, b, s.req(e, "b", 0))
	if lb.Term <= highest {
		t.Fatalf("term after delete = %d, want > %d (every earlier term)", lb.Term, highest)
	}
	if _, err := a.Acquire(electiontesting.Context(t), s.req(e, "a", 0)); !errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("old leader's Acquire after the new holder took over: %v, want ErrLeaseHeld", err)
	}
	if _, err := a.Renew(electiontesting.Context(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("old leader's Renew after the new holder took over: %v, want ErrLeaseLost", err)
	}
}

// termAboveRepeatedDeletes: a held lease's record deleted from outside,
// again and again: each next holder's term is above every earlier one.
func (s *suite) termAboveRepeatedDeletes(t *testing.T) {
	if s.o.DeleteRecord == nil {
		t.Fatal("Options.DeleteRecord is required: every backend must keep terms rising after an out-of-band delete")
	}
	b, e := s.newBackend(t), electiontesting.Election(t)
	var last uint64
	for i := range 5 {
		l := mustAcquire(t, b, s.req(e, fmt.Sprint("n", i), 0))
		if l.Term <= last {
			t.Fatalf("term %d after a delete, earlier %d", l.Term, last)
		}
		last = l.Term
		s.o.DeleteRecord(t, e)
	}
}

func (s *suite) expiry(t *testing.T) {
	a, b, e := s.newBackend(t), s.newBackend(t), electiontesting.Election(t)
	start := time.Now()
	la := mustAcquire(t, a, s.req(e, "a", s.o.TTL))
	if _, err := b.Acquire(electiontesting.Context(t), s.req(e, "b", 0)); time.Since(start) < s.o.TTL {
		wantHeld(t, err, "a")
	}
	lb := s.waitAcquire(t, b, s.req(e, "b", 0), s.expiryLimit())
	if took := time.Since(start); took < s.o.TTL {
		t.Fatalf("taken over after %v, before the TTL %v", took, s.o.TTL)
	}
	if lb.Term <= la.Term {
		t.Fatalf("term %d after expiry, want > %d", lb.Term, la.Term)
	}
}

func (s *suite) racing(t *testing.T) {
	n := s.o.Candidates
	backends := make([]fxelection.Backend, n)
	for i := range backends {
		backends[i] = s.newBackend(t)
	}
	e := electiontesting.Election(t)
	var last uint64
	for round := range s.o.Rounds {
		type out struct {
			id  string
			l   fxelection.Lease
			err error
		}
		outs := make([]out, n)
		var wg sync.WaitGroup
		startGate := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startGate
				id := fmt.Sprintf("c%02d", i)
				l, err := backends[i].Acquire(electiontesting.Context(t), s.req(e, id, 0))
				outs[i] = out{id, l, err}
			}()
		}
		close(startGate)
		wg.Wait()
		var winners []out
		for _, o := range outs {
			switch {
			case o.err == nil:
				winners = append(winners, o)
			case !errors.Is(o.err, backendkit.ErrLeaseHeld):
				t.Fatalf("round %d: %s: %v", round, o.id, o.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, len(winners))
		}
		w := winners[0]
		for _, o := range outs {
			var he *backendkit.HeldError
			if errors.As(o.err, &he) && (he.Holder.Holder != w.id || he.Holder.Term != w.l.Term) {
				// A loser may have read the record before the winner wrote
				// it only if it then lost the write: it must name the winner.
				t.Fatalf("round %d: %s told holder %q term %d, winner %s term %d", round, o.id, he.Holder.Holder, he.Holder.Term, w.id, w.l.Term)
			}
		}
		if w.l.Term <= last {
			t.Fatalf("round %d: term %d not above %d", round, w.l.Term, last)
		}
		last = w.l.Term
		var wIdx int
		fmt.Sscanf(w.id, "c%d", &wIdx)
		if err := backends[wIdx].Release(electiontesting.Context(t), w.l); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
	}
}

func (s *suite) independent(t *testing.T) {
	a, b := s.newBackend(t), s.newBackend(t)
	e1, e2 := electiontesting.Election(t)+"-1", electiontesting.Election(t)+"-2"
	l1 := mustAcquire(t, a, s.req(e1, "a", 0))
	l2 := mustAcquire(t, b, s.req(e2, "b", 0))
	if err := a.Release(electiontesting.Context(t), l1); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(electiontesting.Context(t), e2)
	if err != nil || got.Holder != "b" || got.Term != l2.Term {
		t.Fatalf("releasing %s disturbed %s: %+v, %v", e1, e2, got, err)
	}
	if _, err := a.Acquire(electiontesting.Context(t), s.req(e2, "a", 0)); !errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("a took b's election: %v", err)
	}
}

func (s *suite) cancelled(t *testing.T) {
	b, e := s.newBackend(t), electiontesting.Election(t)
	l := mustAcquire(t, b, s.req(e, "a", 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, f func() error) {
		start := time.Now()
		err := f()
		if err == nil {
			t.Errorf("%s with a cancelled context returned nil", op)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s with a cancelled context took %v", op, took)
		}
	}
	check("Acquire", func() error { _, err := b.Acquire(ctx, s.req(e, "b", 0)); return err })
	check("Renew", func() error { _, err := b.Renew(ctx, l); return err })
	check("Get", func() error { _, err := b.Get(ctx, e); return err })
	check("Release", func() error { return b.Release(ctx, l) })
	if got, err := b.Get(electiontesting.Context(t), e); err != nil || got.Holder != "a" {
		t.Fatalf("after cancelled calls Get = %+v, %v", got, err)
	}
}

func (s *suite) garbage(t *testing.T) {
	if s.o.PutGarbage == nil {
		t.Fatal("Options.PutGarbage is required: every backend must survive foreign records")
	}
	b, e := s.newBackend(t), electiontesting.Election(t)
	start := time.Now()
	s.o.PutGarbage(t, e, s.o.TTL)
	_, err := b.Acquire(electiontesting.Context(t), s.req(e, "a", 0))
	if time.Since(start) < s.o.TTL {
		if err == nil {
			t.Fatal("Acquire took over a foreign record before it expired")
		}
		if !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Fatalf("Acquire over a foreign record: %v, want ErrInvalidRecord", err)
		}
	}
	if _, err := b.Get(electiontesting.Context(t), e); time.Since(start) < s.o.TTL && !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Get of a foreign record: %v, want ErrInvalidRecord", err)
	}
	forged := fxelection.Lease{Election: e, Holder: "a", Term: 1, Duration: time.Minute}
	if _, err := b.Renew(electiontesting.Context(t), forged); err == nil {
		t.Fatal("Renew succeeded over a foreign record")
	}
	_ = b.Release(electiontesting.Context(t), forged) // must not panic; may fail
	if s.o.GarbageNeverExpires {
		return
	}
	deadline := time.Now().Add(s.expiryLimit())
	for {
		if _, err := b.Acquire(electiontesting.Context(t), s.req(e, "a", 0)); err == nil {
			if time.Since(start) < s.o.TTL {
				t.Fatal("foreign record taken over before it expired")
			}
			return
		} else if !errors.Is(err, backendkit.ErrInvalidRecord) && !errors.Is(err, backendkit.ErrLeaseHeld) {
			t.Fatalf("Acquire: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a foreign record that expired still blocks the election")
		}
		time.Sleep(s.o.TTL / 10)
	}
}

// storeDown: while the store is down every operation is a store failure;
// after a restart (where the store can) the holder renews with its term.
func (s *suite) storeDown(t *testing.T) {
	st := s.o.StoreDown(t)
	b, e := st.Backend, electiontesting.Election(t)
	l := mustAcquire(t, b, s.req(e, "a", time.Minute))
	if err := st.Kill(); err != nil {
		t.Fatal(err)
	}
	storeFailure := func(op string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, backendkit.ErrLeaseLost) || errors.Is(err, backendkit.ErrNoLease) || errors.Is(err, backendkit.ErrLeaseHeld) {
			t.Fatalf("%s with the store down: %v, want a store failure", op, err)
		}
	}
	_, err := b.Renew(electiontesting.Context(t), l)
	storeFailure("Renew", err)
	_, err = b.Get(electiontesting.Context(t), e)
	storeFailure("Get", err)
	_, err = b.Acquire(electiontesting.Context(t), s.req(e, "b", time.Minute))
	storeFailure("Acquire", err)
	storeFailure("Release", b.Release(electiontesting.Context(t), l))
	if st.Restart == nil {
		return
	}
	if err := st.Restart(); err != nil {
		t.Fatal(err)
	}
	// The client may take a while to reconnect: a store failure until then
	// is allowed, for half the lease (the lease must still be valid when
	// the renewal lands); anything saying the lease is gone is not.
	restarted := time.Now()
	var l2 fxelection.Lease
	for {
		l2, err = b.Renew(electiontesting.Context(t), l)
		if err == nil {
			break
		}
		storeFailure("Renew after the restart", err)
		if time.Since(restarted) > l.Duration/2 {
			t.Fatalf("Renew after the restart: still failing after %v: %v", l.Duration/2, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if l2.Term != l.Term || l2.Holder != l.Holder || st.RenewWrites && l2.Version == l.Version {
		t.Fatalf("renewed %+v from %+v", l2, l)
	}
}
