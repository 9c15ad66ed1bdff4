package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/metrics"
)

// lockTiming is the lock package's test timing, for fake time:
// LeaseDuration > RenewDeadline > 1.2 × RetryPeriod.
var lockTiming = lock.Options{Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}

// newLockMetrics returns a pedantic registry and a LockMetrics on it.
func newLockMetrics(t *testing.T, opts metrics.LockMetricsOptions) (*prometheus.Registry, *metrics.LockMetrics) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	lm, err := metrics.NewLockMetrics(reg, opts)
	if err != nil {
		t.Fatalf("NewLockMetrics: %v", err)
	}
	return reg, lm
}

// newObservedLocker returns a Locker on b with the test timing, observed
// by lm.
func newObservedLocker(t *testing.T, b fxelection.Backend, identity string, lm *metrics.LockMetrics) *lock.Locker {
	t.Helper()
	opts := lockTiming
	opts.Identity, opts.Observer = identity, lm
	l, err := lock.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func releaseLock(t *testing.T, lk *lock.Lock) {
	t.Helper()
	if err := lk.Release(context.Background()); err != nil {
		t.Errorf("release %s: %v", lk.Key(), err)
	}
}

// outcomes returns the acquisition counts of one lock label, all five
// documented outcomes, as series renders them.
func outcomes(lockLabel string, acquired, locked, canceled, closed, failed float64) map[string]float64 {
	out := map[string]float64{}
	for o, v := range map[lock.Outcome]float64{
		lock.OutcomeAcquired: acquired, lock.OutcomeLocked: locked, lock.OutcomeCanceled: canceled,
		lock.OutcomeClosed: closed, lock.OutcomeError: failed,
	} {
		out["lock="+lockLabel+",outcome="+string(o)] = v
	}
	return out
}

// merge returns the union of maps.
func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestLockMetrics: two Lockers on the in-memory backend, observed by one
// LockMetrics, take a lock, are refused it (TryAcquire: locked), give up
// waiting for it (canceled), fail on the store (error), take two slots of
// a semaphore and are refused a third, release, lose a lock freed behind
// their back, and try again once closed. Every series says so, to the
// bucket: on fake time, waits and hold times are exact.
func TestLockMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
		store := memory.New()
		faulty := faultinject.New(store)
		a := newObservedLocker(t, store, "a", lm)
		b := newObservedLocker(t, faulty, "b", lm)
		ctx := context.Background()

		jobs, err := a.TryAcquire(ctx, "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.TryAcquire(ctx, "jobs"); !errors.Is(err, lock.ErrLocked) {
			t.Fatalf("TryAcquire of a held lock: %v, want ErrLocked", err)
		}
		faulty.Fail(backendkit.OpAcquire, faultinject.ErrInjected)
		if _, err := b.TryAcquire(ctx, "jobs"); !errors.Is(err, faultinject.ErrInjected) {
			t.Fatalf("TryAcquire on a failing store: %v, want the store failure", err)
		}
		faulty.Fail(backendkit.OpAcquire, nil)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := b.Acquire(wctx, "jobs"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire of a held lock with a 1s timeout: %v, want DeadlineExceeded", err)
		}
		cancel()
		var slots []*lock.Lock
		for range 2 {
			s, err := b.TryAcquireSemaphore(ctx, "slots", 2)
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, s)
		}
		if _, err := a.TryAcquireSemaphore(ctx, "slots", 2); !errors.Is(err, lock.ErrLocked) {
			t.Fatalf("TryAcquireSemaphore with every slot held: %v, want ErrLocked", err)
		}
		if got, want := series(t, reg, metrics.NameLocksHeld), map[string]float64{"lock=jobs": 1, "lock=slots": 2}; !equal(got, want) {
			t.Errorf("%s while held = %v, want %v", metrics.NameLocksHeld, got, want)
		}

		time.Sleep(2 * time.Second) // jobs held 3s in all, the slots 2s
		releaseLock(t, jobs)
		for _, s := range slots {
			releaseLock(t, s)
		}

		// A lock freed behind its holder's back (as an operator might) is
		// lost at the next renewal; its Release reports nothing more.
		took := time.Now()
		lost, err := a.Acquire(ctx, "lost")
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Release(ctx, lost.Lease()); err != nil {
			t.Fatal(err)
		}
		<-lost.Context().Done()
		lostHeld := time.Since(took)
		if cause := context.Cause(lost.Context()); !errors.Is(cause, lock.ErrLost) {
			t.Fatalf("cause %v, want ErrLost", cause)
		}
		releaseLock(t, lost)

		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Acquire(ctx, "jobs"); !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("Acquire on a closed Locker: %v, want ErrClosed", err)
		}

		want := merge(outcomes("jobs", 1, 1, 1, 1, 1), outcomes("slots", 2, 1, 0, 0, 0), outcomes("lost", 1, 0, 0, 0, 0))
		if got := series(t, reg, metrics.NameLockAcquisitions); !equal(got, want) {
			t.Errorf("%s = %v, want %v", metrics.NameLockAcquisitions, got, want)
		}
		zero := map[string]float64{"lock=jobs": 0, "lock=slots": 0, "lock=lost": 0}
		if got := series(t, reg, metrics.NameLocksHeld); !equal(got, zero) {
			t.Errorf("%s after release = %v, want %v", metrics.NameLocksHeld, got, zero)
		}
		if got, want := series(t, reg, metrics.NameLockLost), map[string]float64{"lock=jobs": 0, "lock=slots": 0, "lock=lost": 1}; !equal(got, want) {
			t.Errorf("%s = %v, want %v", metrics.NameLockLost, got, want)
		}

		w, h := metrics.LockWaitBuckets(), metrics.LockHeldBuckets()
		expected := `
# HELP fxelection_lock_wait_seconds How long each lock acquisition call (Acquire, TryAcquire, semaphores) took, by outcome (acquired, locked, canceled, closed, error).
# TYPE fxelection_lock_wait_seconds histogram
` + histogram(metrics.NameLockWait, `lock="jobs",outcome="acquired"`, w, 0) +
			histogram(metrics.NameLockWait, `lock="jobs",outcome="locked"`, w, 0) +
			histogram(metrics.NameLockWait, `lock="jobs",outcome="error"`, w, 0) +
			histogram(metrics.NameLockWait, `lock="jobs",outcome="canceled"`, w, 1) +
			histogram(metrics.NameLockWait, `lock="jobs",outcome="closed"`, w, 0) +
			histogram(metrics.NameLockWait, `lock="slots",outcome="acquired"`, w, 0, 0) +
			histogram(metrics.NameLockWait, `lock="slots",outcome="locked"`, w, 0) +
			histogram(metrics.NameLockWait, `lock="lost",outcome="acquired"`, w, 0) + `
# HELP fxelection_lock_held_seconds How long each lock was held, from the start of the attempt that took it to its release or loss.
# TYPE fxelection_lock_held_seconds histogram
` + histogram(metrics.NameLockHeld, `lock="jobs"`, h, 3) +
			histogram(metrics.NameLockHeld, `lock="slots"`, h, 2, 2) +
			histogram(metrics.NameLockHeld, `lock="lost"`, h, lostHeld.Seconds())
		if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), metrics.NameLockWait, metrics.NameLockHeld); err != nil {
			t.Errorf("histograms:\n%v", err)
		}
		if lostHeld <= 0 || lostHeld > lockTiming.RetryPeriod {
			t.Errorf("the lost lock was held %v, want up to its first renewal (%v)", lostHeld, lockTiming.RetryPeriod)
		}
		lintClean(t, reg)
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLockMetricsLostOnPartition: a holder cut off from its store loses
// the lock at its renew deadline and a waiter of another Locker on the
// healthy store takes it once the lease has expired: one LockMetrics
// serving both counts one loss, two acquisitions, and one lock held.
func TestLockMetricsLostOnPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
		store := memory.New()
		cut := faultinject.New(store)
		a, b := newObservedLocker(t, cut, "a", lm), newObservedLocker(t, store, "b", lm)
		held, err := a.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		cut.Partition(true)
		next, err := b.Acquire(context.Background(), "k") // after the lease expired
		if err != nil {
			t.Fatal(err)
		}
		if held.Context().Err() == nil {
			t.Fatal("the cut-off holder's Context has not ended though another holder took the lock")
		}
		if got, want := series(t, reg, metrics.NameLockLost), map[string]float64{"lock=k": 1}; !equal(got, want) {
			t.Errorf("%s = %v, want %v", metrics.NameLockLost, got, want)
		}
		if got, want := series(t, reg, metrics.NameLocksHeld), map[string]float64{"lock=k": 1}; !equal(got, want) {
			t.Errorf("%s = %v, want %v", metrics.NameLocksHeld, got, want)
		}
		if got := series(t, reg, metrics.NameLockAcquisitions)["lock=k,outcome=acquired"]; got != 2 {
			t.Errorf("acquired = %v, want 2", got)
		}
		if got := series(t, reg, metrics.NameLockHeld); !equal(got, map[string]float64{"lock=k": 1}) {
			t.Errorf("%s counts %v, want one hold", metrics.NameLockHeld, got)
		}
		cut.Partition(false)
		releaseLock(t, held)
		releaseLock(t, next)
		if got, want := series(t, reg, metrics.NameLocksHeld), map[string]float64{"lock=k": 0}; !equal(got, want) {
			t.Errorf("%s after release = %v, want %v", metrics.NameLocksHeld, got, want)
		}
	})
}

// distinctLockLabels returns every value of the lock label in reg, over
// all families.
func distinctLockLabels(t *testing.T, reg prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "lock" {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// acquireAndRelease reports one acquisition of key and its release.
func acquireAndRelease(lm *metrics.LockMetrics, key string) {
	lm.ObserveLock(lock.Event{Kind: lock.EventAcquire, Key: key, Outcome: lock.OutcomeAcquired, Wait: time.Millisecond})
	lm.ObserveLock(lock.Event{Kind: lock.EventRelease, Key: key, Held: time.Second})
}

// TestLockMetricsBoundedLabels: 10,000 distinct keys give at most
// MaxKeys + 1 lock label values, for the default MaxKeys and a small one:
// the first MaxKeys keys get their own, the rest share "_other". A key
// that got its own label keeps it after the cap is reached; nothing is
// lost from the totals.
func TestLockMetricsBoundedLabels(t *testing.T) {
	for _, tc := range []struct {
		maxKeys, want int
	}{{0, metrics.DefaultLockMaxKeys}, {7, 7}} {
		t.Run(fmt.Sprint("MaxKeys=", tc.maxKeys), func(t *testing.T) {
			reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{MaxKeys: tc.maxKeys})
			const keys = 10000
			for i := range keys {
				acquireAndRelease(lm, fmt.Sprintf("user-%d", i))
			}
			acquireAndRelease(lm, "user-0") // had its own label before the cap: keeps it
			labels := distinctLockLabels(t, reg)
			if len(labels) != tc.want+1 || !labels[metrics.LockOther] || !labels["user-0"] || !labels[fmt.Sprint("user-", tc.want-1)] {
				t.Errorf("%d lock label values (user-0 %v, _other %v), want %d: the first %d keys and %s",
					len(labels), labels["user-0"], labels[metrics.LockOther], tc.want+1, tc.want, metrics.LockOther)
			}
			acq := series(t, reg, metrics.NameLockAcquisitions)
			total := 0.0
			for _, v := range acq {
				total += v
			}
			if total != keys+1 || acq["lock=user-0,outcome=acquired"] != 2 || acq["lock=_other,outcome=acquired"] != float64(keys-tc.want) {
				t.Errorf("acquisitions: %v in all, user-0 %v, _other %v; want %d, 2, %d",
					total, acq["lock=user-0,outcome=acquired"], acq["lock=_other,outcome=acquired"], keys+1, keys-tc.want)
			}
			for k, v := range series(t, reg, metrics.NameLocksHeld) {
				if v != 0 {
					t.Errorf("%s{%s} = %v after every release, want 0", metrics.NameLocksHeld, k, v)
				}
			}
			if n, err := testutil.GatherAndCount(reg); err != nil || n > (tc.want+1)*12 {
				t.Errorf("%d series (%v), want at most 12 per lock label value", n, err)
			}
			lintClean(t, reg)
		})
	}
}

// TestLockMetricsCapWithLocker: with MaxKeys 3, a Locker holding ten
// locks at once shows three under their own key and seven under _other,
// and all back to zero once released.
func TestLockMetricsCapWithLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{MaxKeys: 3})
		l := newObservedLocker(t, memory.New(), "a", lm)
		var held []*lock.Lock
		for i := range 10 {
			lk, err := l.TryAcquire(context.Background(), fmt.Sprint("k", i))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, lk)
		}
		want := map[string]float64{"lock=k0": 1, "lock=k1": 1, "lock=k2": 1, "lock=_other": 7}
		if got := series(t, reg, metrics.NameLocksHeld); !equal(got, want) {
			t.Errorf("%s = %v, want %v", metrics.NameLocksHeld, got, want)
		}
		for _, lk := range held {
			releaseLock(t, lk)
		}
		want = map[string]float64{"lock=k0": 0, "lock=k1": 0, "lock=k2": 0, "lock=_other": 0}
		if got := series(t, reg, metrics.NameLocksHeld); !equal(got, want) {
			t.Errorf("%s after release = %v, want %v", metrics.NameLocksHeld, got, want)
		}
	})
}

// TestLockMetricsKeyFunc: LockMetricsOptions.Key maps keys to label
// values (here: per-user keys to their prefix); its result is made safe
// like any label value; "" and a panic count the key under _other.
func TestLockMetricsKeyFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{Key: func(key string) string {
			switch {
			case key == "boom":
				panic("hostile key")
			case key == "skip":
				return ""
			case key == "raw":
				return "r\xffaw\x1b"
			}
			prefix, _, _ := strings.Cut(key, "/")
			return prefix
		}})
		l := newObservedLocker(t, memory.New(), "a", lm)
		for _, key := range []string{"report/alice", "report/bob", "export/carol", "boom", "skip", "raw"} {
			lk, err := l.TryAcquire(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			defer releaseLock(t, lk)
		}
		want := map[string]float64{"lock=report": 2, "lock=export": 1, "lock=_other": 2, "lock=r\uFFFDaw": 1}
		if got := series(t, reg, metrics.NameLocksHeld); !equal(got, want) {
			t.Errorf("%s = %v, want %v", metrics.NameLocksHeld, got, want)
		}
		checkLabels(t, reg)
	})
}

// TestLockMetricsHostileEvents: events no Locker sends (keys of invalid
// UTF-8, with control characters, of a megabyte or empty; an unknown
// outcome or kind; negative durations) neither panic nor make a scrape
// fail: label values are cleaned and bounded, an unknown outcome is
// counted as "other", an unknown kind ignored.
func TestLockMetricsHostileEvents(t *testing.T) {
	reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
	huge := strings.Repeat("x", 1<<20)
	for _, key := range []string{"\xff\xfe\xfd", "a\x1b[31mb", "line\r\nforged 1", huge, "", "\x00", "x\u202ey"} {
		lm.ObserveLock(lock.Event{Kind: lock.EventAcquire, Key: key, Outcome: lock.OutcomeAcquired, Wait: -time.Second})
		lm.ObserveLock(lock.Event{Kind: lock.EventLost, Key: key, Held: -time.Hour})
	}
	lm.ObserveLock(lock.Event{Kind: lock.EventAcquire, Key: "k", Outcome: "we\xffird"})
	lm.ObserveLock(lock.Event{Kind: lock.EventKind(99), Key: "never"})
	lm.ObserveLock(lock.Event{})
	var nilMetrics *metrics.LockMetrics
	nilMetrics.ObserveLock(lock.Event{Kind: lock.EventAcquire, Key: "k", Outcome: lock.OutcomeAcquired})

	checkLabels(t, reg)
	lintClean(t, reg)
	labels := distinctLockLabels(t, reg)
	for l := range labels {
		if len(l) > 256 {
			t.Errorf("lock label of %d bytes, want at most 256", len(l))
		}
	}
	if labels["never"] || !labels[metrics.LockOther] || !labels["\uFFFD"] || !labels["a[31mb"] || !labels[huge[:256]] {
		t.Errorf("lock labels %v: want cleaned keys, the empty ones as _other, and no label for an unknown kind", labels)
	}
	if got := series(t, reg, metrics.NameLockAcquisitions)["lock=k,outcome=other"]; got != 1 {
		t.Errorf("an unknown outcome counted %v times as other, want 1", got)
	}
	for k, v := range series(t, reg, metrics.NameLocksHeld) {
		if v != 0 {
			t.Errorf("%s{%s} = %v, want 0", metrics.NameLocksHeld, k, v)
		}
	}
}

// TestLockMetricsEndBeforeAcquisition: a Lock's end is reported by its own
// goroutine and its acquisition by the caller's, so a lock lost at once
// can be reported lost before acquired; the gauge never goes below zero
// and ends right. An end without any acquisition shows 0, not -1.
func TestLockMetricsEndBeforeAcquisition(t *testing.T) {
	reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
	lm.ObserveLock(lock.Event{Kind: lock.EventLost, Key: "k"})
	if got := series(t, reg, metrics.NameLocksHeld); !equal(got, map[string]float64{"lock=k": 0}) {
		t.Errorf("%s after an end seen first = %v, want 0", metrics.NameLocksHeld, got)
	}
	lm.ObserveLock(lock.Event{Kind: lock.EventAcquire, Key: "k", Outcome: lock.OutcomeAcquired})
	if got := series(t, reg, metrics.NameLocksHeld); !equal(got, map[string]float64{"lock=k": 0}) {
		t.Errorf("%s after its acquisition = %v, want 0", metrics.NameLocksHeld, got)
	}
	acquireAndRelease(lm, "k")
	lm.ObserveLock(lock.Event{Kind: lock.EventAcquire, Key: "k", Outcome: lock.OutcomeAcquired})
	if got := series(t, reg, metrics.NameLocksHeld); !equal(got, map[string]float64{"lock=k": 1}) {
		t.Errorf("%s with one held = %v, want 1", metrics.NameLocksHeld, got)
	}
}

// closingBackend closes a Locker from inside its first successful
// Acquire: the lease is granted, but the Locker is closed before the Lock
// is handed out.
type closingBackend struct {
	fxelection.Backend
	once   sync.Once
	locker *lock.Locker
}

func (b *closingBackend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.Backend.Acquire(ctx, req)
	if err == nil {
		b.once.Do(func() { _ = b.locker.Close(ctx) })
	}
	return l, err
}

// TestLockMetricsCloseRace: a Locker closed between the store granting a
// lease and the Lock being handed out gives the lease back and returns
// ErrClosed; the acquisition counts as closed and the lock is not shown
// held. (The Locker also reports an EventRelease for the Lock it gave
// back, which no acquired outcome matched: the gauge must show 0, not -1.)
func TestLockMetricsCloseRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
		store := memory.New()
		b := &closingBackend{Backend: store}
		b.locker = newObservedLocker(t, b, "a", lm)
		if _, err := b.locker.Acquire(context.Background(), "k"); !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("Acquire while the Locker closes: %v, want ErrClosed", err)
		}
		if _, err := store.Get(context.Background(), "k"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("the lease was not given back: %v", err)
		}
		if got := series(t, reg, metrics.NameLockAcquisitions); !equal(got, outcomes("k", 0, 0, 0, 1, 0)) {
			t.Errorf("%s = %v, want one closed", metrics.NameLockAcquisitions, got)
		}
		if got := series(t, reg, metrics.NameLocksHeld); !equal(got, map[string]float64{"lock=k": 0}) {
			t.Errorf("%s = %v, want 0", metrics.NameLocksHeld, got)
		}
	})
}

// TestLockMetricsConcurrentLockers: goroutines on four Lockers sharing one
// LockMetrics take and release three keys, with scrapes in between (run
// with -race): every acquisition is counted and the gauge ends at zero.
func TestLockMetricsConcurrentLockers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
		store := memory.New()
		var lockers []*lock.Locker
		for i := range 4 {
			lockers = append(lockers, newObservedLocker(t, store, fmt.Sprint("locker-", i), lm))
		}
		const goroutines, rounds = 12, 20
		keys := []string{"a", "b", "c"}
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for r := range rounds {
					lk, err := lockers[g%4].Acquire(context.Background(), keys[(g+r)%3])
					if err != nil {
						t.Error(err)
						return
					}
					time.Sleep(10 * time.Millisecond)
					if _, err := reg.Gather(); err != nil {
						t.Error(err)
					}
					releaseLock(t, lk)
				}
			})
		}
		wg.Wait()
		acquired := 0.0
		for _, k := range keys {
			acquired += series(t, reg, metrics.NameLockAcquisitions)["lock="+k+",outcome=acquired"]
		}
		if acquired != goroutines*rounds {
			t.Errorf("%v acquisitions counted, want %d", acquired, goroutines*rounds)
		}
		for k, v := range series(t, reg, metrics.NameLocksHeld) {
			if v != 0 {
				t.Errorf("%s{%s} = %v after every release, want 0", metrics.NameLocksHeld, k, v)
			}
		}
	})
}

// TestLockMetricsConcurrentEvents: 32 goroutines report acquisitions and
// releases of 500 keys (more than MaxKeys) while others scrape (run with
// -race): nothing is lost, the labels stay bounded, the gauges end at
// zero.
func TestLockMetricsConcurrentEvents(t *testing.T) {
	reg, lm := newLockMetrics(t, metrics.LockMetricsOptions{})
	const goroutines, rounds = 32, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				acquireAndRelease(lm, fmt.Sprint("key-", (g*rounds+r)%500))
			}
		})
	}
	stop := make(chan struct{})
	var scrapes sync.WaitGroup
	scrapes.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	scrapes.Wait()
	total := 0.0
	for _, v := range series(t, reg, metrics.NameLockAcquisitions) {
		total += v
	}
	if total != goroutines*rounds {
		t.Errorf("%v acquisitions counted, want %d", total, goroutines*rounds)
	}
	if n := len(distinctLockLabels(t, reg)); n != metrics.DefaultLockMaxKeys+1 {
		t.Errorf("%d lock label values, want %d", n, metrics.DefaultLockMaxKeys+1)
	}
	for k, v := range series(t, reg, metrics.NameLocksHeld) {
		if v != 0 {
			t.Errorf("%s{%s} = %v, want 0", metrics.NameLocksHeld, k, v)
		}
	}
}

// TestNewLockMetricsErrors: a negative MaxKeys is refused, naming the
// field; a second LockMetrics on one registerer is refused (one serves
// every Locker).
func TestNewLockMetricsErrors(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if _, err := metrics.NewLockMetrics(reg, metrics.LockMetricsOptions{MaxKeys: -1}); err == nil || !strings.Contains(err.Error(), "MaxKeys") {
		t.Errorf("NewLockMetrics with MaxKeys -1: %v, want an error naming MaxKeys", err)
	}
	if _, err := metrics.NewLockMetrics(reg, metrics.LockMetricsOptions{}); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if _, err := metrics.NewLockMetrics(reg, metrics.LockMetricsOptions{}); !errors.As(err, &are) {
		t.Errorf("a second NewLockMetrics on one registerer: %v, want AlreadyRegisteredError", err)
	}
	// Elector metrics and lock metrics live side by side.
	if _, err := metrics.New(reg); err != nil {
		t.Errorf("New beside NewLockMetrics: %v", err)
	}
}

// BenchmarkObserveLock: one acquisition and its release reported, from
// parallel goroutines, on a label that has its series.
func BenchmarkObserveLock(b *testing.B) {
	lm, err := metrics.NewLockMetrics(prometheus.NewRegistry(), metrics.LockMetricsOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			acquireAndRelease(lm, "jobs")
		}
	})
}
