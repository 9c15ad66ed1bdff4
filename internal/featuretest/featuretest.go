// Package featuretest runs the repository's end-to-end feature cases:
// electors, locks and semaphores whose outcome no store decides (priority
// order, MinTenure, grace, Defer, preemption, hand-over, step-down,
// rolling upgrades, lock waiting, semaphore slot choice, mutual exclusion
// under contention). The conformance suite (electiontest.RunBackendTests)
// checks what each store decides; these cases run once on the in-memory
// backend under testing/synctest (RunMemory, default tier) and on one push
// store (Redis) and one observed-time store (S3) at real timings (Run,
// e2e tier).
package featuretest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/fencedcounter"
)

// Options tune Run. The zero value suits a store without a minimum lease
// length, with the holders of MutualExclusion writing through an
// in-process fenced counter.
type Options struct {
	// Timing is the electors' and Lockers' timing. Zero fields default to
	// LeaseDuration 3s, RenewDeadline 2s, RetryPeriod 500ms.
	Timing electiontest.Timing

	// Counter returns the fenced store MutualExclusion's holders write
	// through (called once per run; every run uses keys of its own).
	// Default: fencedcounter.NewMemory.
	Counter func(t *testing.T) fencedcounter.Counter

	// Locks tunes the lock cases; zero fields take the defaults.
	Locks LockOptions
}

// LockOptions tune the lock cases: each client a lock.Locker of its own
// on a backend of its own, as separate processes would be.
type LockOptions struct {
	// Clients is how many Lockers contend for one lock in MutualExclusion.
	// Default: 8.
	Clients int
	// Acquisitions is how many times each of them takes it. Default: 200.
	Acquisitions int
	// SemaphoreClients is how many Lockers share a semaphore of 3 slots in
	// Semaphore. Default: 10.
	SemaphoreClients int
	// SemaphoreRounds is how many times each of them takes a slot.
	// Default: 30.
	SemaphoreRounds int
	// RetryPeriod is the Lockers' RetryPeriod. Default: 50ms.
	RetryPeriod time.Duration
}

func (o Options) withDefaults() Options {
	o.Timing = o.Timing.WithDefaults()
	if o.Counter == nil {
		o.Counter = func(*testing.T) fencedcounter.Counter { return fencedcounter.NewMemory() }
	}
	l := &o.Locks
	l.Clients = cmpOr(l.Clients, 8)
	l.Acquisitions = cmpOr(l.Acquisitions, 200)
	l.SemaphoreClients = cmpOr(l.SemaphoreClients, 10)
	l.SemaphoreRounds = cmpOr(l.SemaphoreRounds, 30)
	if l.RetryPeriod == 0 {
		l.RetryPeriod = 50 * time.Millisecond
	}
	return o
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// env is what one case runs with.
type env struct {
	newBackend electiontest.NewBackend
	o          Options
}

// feature is one case; wait says it mostly waits for leases to expire
// (it runs in parallel with the other such cases).
type feature struct {
	name string
	wait bool
	f    func(s *env, t *testing.T)
}

// features lists the cases, with the part of the former conformance suite
// each came from in its name.
var features = []feature{
	{"EndToEnd/VanishedLeaderReplaced", true, (*env).vanished},
	{"EndToEnd/FixedIdentityRestart", true, (*env).fixedIdentityRestart},
	{"EndToEnd/StepDownWhileBackendHangs/Direct", true, func(s *env, t *testing.T) { s.stepDownHang(t, false) }},
	{"EndToEnd/StepDownWhileBackendHangs/Batched", true, func(s *env, t *testing.T) { s.stepDownHang(t, true) }},
	{"EndToEnd/ResignToNamed", true, (*env).resignToNamed},
	{"EndToEnd/ResignToAbsent", true, (*env).resignToAbsent},
	{"EndToEnd/Preempt", true, (*env).preempt},
	{"EndToEnd/PriorityGrace", true, (*env).priorityGrace},
	{"EndToEnd/RollingUpgrade", true, (*env).rollingUpgrade},
	{"EndToEnd/ManyElectionsOneBackend", false, (*env).manyElections},
	{"Locks/TryAcquireHeld", false, (*env).lockTryAcquireHeld},
	{"Locks/ReleasedAcquirable", false, (*env).lockReleasedAcquirable},
	{"Locks/TermsAcrossLockers", false, (*env).lockTermsAcrossLockers},
	{"Locks/SemaphoreFull", false, (*env).semaphoreFull},
	{"Locks/Semaphore", false, (*env).semaphore},
	{"Locks/SemaphoreKilledHolder", true, (*env).semaphoreKilledHolder},
	{"Locks/MutualExclusion", true, (*env).mutualExclusion},
}

// Run runs every feature case against the backends newBackend makes, at
// real timings; each case uses election names of its own, so one store
// serves all.
func Run(t *testing.T, newBackend electiontest.NewBackend, o Options) {
	run(t, func(*testing.T) electiontest.NewBackend { return newBackend }, o.withDefaults(), false)
}

// RunMemory runs every feature case on the in-memory backend, each in a
// testing/synctest bubble of its own (fake time) with a store of its own;
// with plain, the backend offers only fxelection.Backend's four methods
// (no push wake-up, no Transfer, no batches), as the simplest store would.
func RunMemory(t *testing.T, plain bool) {
	store := func(*testing.T) electiontest.NewBackend {
		m := memory.New()
		if plain {
			return func(*testing.T) fxelection.Backend { return plainBackend{m} }
		}
		return func(*testing.T) fxelection.Backend { return m }
	}
	run(t, store, Options{}.withDefaults(), true)
}

// plainBackend hides every optional interface of the backend it wraps.
type plainBackend struct{ b fxelection.Backend }

func (p plainBackend) Acquire(ctx context.Context, r backendkit.AcquireRequest) (fxelection.Lease, error) {
	return p.b.Acquire(ctx, r)
}
func (p plainBackend) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	return p.b.Renew(ctx, l)
}
func (p plainBackend) Release(ctx context.Context, l fxelection.Lease) error {
	return p.b.Release(ctx, l)
}
func (p plainBackend) Get(ctx context.Context, e string) (fxelection.Lease, error) {
	return p.b.Get(ctx, e)
}

func run(t *testing.T, store func(*testing.T) electiontest.NewBackend, o Options, fake bool) {
	for _, c := range features {
		t.Run(c.name, func(t *testing.T) {
			if c.wait {
				t.Parallel()
			}
			if !fake {
				c.f(&env{newBackend: store(t), o: o}, t)
				return
			}
			synctest.Test(t, func(t *testing.T) {
				c.f(&env{newBackend: store(t), o: o}, t)
			})
		})
	}
}

// expiryLimit bounds a wait for a first leadership.
func (s *env) expiryLimit() time.Duration { return 2*s.o.Timing.LeaseDuration + 5*time.Second }
