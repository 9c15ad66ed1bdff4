package keeper_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/keeper"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errLost = errors.New("test: lost")

// renewer answers renewals from a script: fail (a store failure), lose
// (the lease is gone) or hang until released; it records when each came.
type renewer struct {
	mu      sync.Mutex
	at      []time.Time
	fail    bool
	lose    bool
	hang    chan struct{} // when set, a renewal waits for it to close
	renewed int
}

func (r *renewer) Renew(ctx context.Context, l backendkit.Lease) (backendkit.Lease, error) {
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	fail, lose, hang := r.fail, r.lose, r.hang
	r.mu.Unlock()
	if hang != nil {
		<-hang
	}
	switch {
	case lose:
		return backendkit.Lease{}, backendkit.ErrLeaseLost
	case fail:
		return backendkit.Lease{}, errors.New("store down")
	}
	r.mu.Lock()
	r.renewed++
	l.Version = string(rune('a' + r.renewed))
	r.mu.Unlock()
	return l, nil
}

func (r *renewer) Due(due time.Time, _ time.Duration) time.Time { return due }

func (r *renewer) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

func config(r keeper.Renewer) *keeper.Config {
	return &keeper.Config{Renewer: r, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Lost: errLost}
}

// TestRenewsEveryRetryPeriodUntilEnd: renewals come every RetryPeriod from
// the start of the last successful one; End stops them and ends the
// Context with its cause, once (OnEnd).
func TestRenewsEveryRetryPeriodUntilEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		var ends []error
		cfg := config(r)
		cfg.OnEnd = func(cause error) { ends = append(ends, cause) }
		start := time.Now()
		k := new(keeper.Keeper)
		k.Start(context.Background(), cfg, backendkit.Lease{Term: 7}, start)
		time.Sleep(5*time.Second + time.Millisecond)
		if err := k.Context().Err(); err != nil {
			t.Fatalf("context ended while renewals succeed: %v", context.Cause(k.Context()))
		}
		at := r.times()
		if len(at) != 10 {
			t.Fatalf("%d renewals in 5s, want 10 (every 500ms)", len(at))
		}
		for i, a := range at {
			if want := start.Add(time.Duration(i+1) * 500 * time.Millisecond); !a.Equal(want) {
				t.Fatalf("renewal %d at %v, want %v", i, a.Sub(start), want.Sub(start))
			}
		}
		released := errors.New("released")
		l, unsure, err := k.Stop(context.Background(), released)
		if err != nil {
			t.Fatal(err)
		}
		k.End(errors.New("second"))
		if c := context.Cause(k.Context()); c != released || len(ends) != 1 || ends[0] != released {
			t.Fatalf("cause %v, OnEnd calls %v; want the first cause, once", c, ends)
		}
		if l.Term != 7 || unsure || l.Version == "" {
			t.Fatalf("final lease %+v unsure %v: want the last renewed lease, sure", l, unsure)
		}
	})
}

// TestDeadlineEndsContext: with every renewal failing, the Context ends at
// the renew deadline from the acquisition's start, with a cause wrapping
// Lost and the last error; the retries come sooner than RetryPeriod.
func TestDeadlineEndsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{fail: true}
		start := time.Now()
		k := new(keeper.Keeper)
		k.Start(context.Background(), config(r), backendkit.Lease{}, start)
		<-k.Context().Done()
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("context ended after %v, want the renew deadline, 2s", took)
		}
		if c := context.Cause(k.Context()); !errors.Is(c, errLost) {
			t.Fatalf("cause %v, want one wrapping Lost", c)
		}
		if _, unsure, err := k.Stop(context.Background(), errors.New("released")); err != nil || !unsure {
			t.Fatalf("Stop after failed renewals: unsure %v, %v; want unsure", unsure, err)
		}
		at := r.times()
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap > 500*time.Millisecond {
				t.Fatalf("retry %d came %v after the failure before it, want at most RetryPeriod", i, gap)
			}
		}
	})
}

// TestLostEndsContext: a renewal that finds the lease gone ends the
// Context at once with a cause wrapping Lost and backendkit.ErrLeaseLost.
func TestLostEndsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{lose: true}
		start := time.Now()
		k := new(keeper.Keeper)
		k.Start(context.Background(), config(r), backendkit.Lease{}, start)
		<-k.Context().Done()
		c := context.Cause(k.Context())
		if !errors.Is(c, errLost) || !errors.Is(c, backendkit.ErrLeaseLost) || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("cause %v after %v, want Lost and ErrLeaseLost at the first renewal", c, time.Since(start))
		}
		if _, _, err := k.Stop(context.Background(), errors.New("released")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStopLetsRenewalInFlightFinish: Stop during a renewal ends the
// Context at once, but waits for the renewal and gives its lease.
func TestStopLetsRenewalInFlightFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{hang: make(chan struct{})}
		k := new(keeper.Keeper)
		k.Start(context.Background(), config(r), backendkit.Lease{Term: 3}, time.Now())
		time.Sleep(600 * time.Millisecond) // the first renewal hangs
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		if _, _, err := k.Stop(ctx, errors.New("released")); err == nil {
			t.Fatal("Stop returned while the renewal was in flight")
		}
		cancel()
		if k.Context().Err() == nil {
			t.Fatal("Stop did not end the Context at once")
		}
		close(r.hang)
		l, unsure, err := k.Stop(context.Background(), errors.New("released"))
		if err != nil || unsure || l.Version == "" {
			t.Fatalf("final lease %+v unsure %v, %v; want the renewal's lease", l, unsure, err)
		}
	})
}

// TestRetryWaits: the renewal retry starts at RetryPeriod/4, doubles, and
// never exceeds RetryPeriod; the attempt retry is RetryPeriod jittered
// when refused and capped at its maximum after store failures.
func TestRetryWaits(t *testing.T) {
	const p = time.Second
	for failures, lo := range []time.Duration{p / 4, p / 2, p, p, p, p} {
		for range 50 {
			if d := keeper.RenewRetry(p, failures+1); d < lo || d > p {
				t.Fatalf("RenewRetry after %d failures: %v, want in [%v, %v]", failures+1, d, lo, p)
			}
		}
	}
	for range 50 {
		if d := keeper.AttemptRetry(p, 10*p, 0); d < p || d > p+p/5 {
			t.Fatalf("AttemptRetry refused: %v, want RetryPeriod jittered", d)
		}
		if d := keeper.AttemptRetry(p, 10*p, 30); d > 10*p || d < 10*p*5/6 {
			t.Fatalf("AttemptRetry after 30 failures: %v, want near and at most the maximum", d)
		}
	}
}

// TestHeldLeasesCostNoGoroutine: between renewals a Keeper holds a timer,
// not a goroutine (the lock package's doc says so), however many leases
// are held; each renewal runs on a goroutine of its own only while it
// lasts.
func TestHeldLeasesCostNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		cfg := config(r)
		before := runtime.NumGoroutine()
		const n = 200
		ks := make([]*keeper.Keeper, n)
		for i := range ks {
			ks[i] = new(keeper.Keeper)
			ks[i].Start(context.Background(), cfg, backendkit.Lease{Term: uint64(i + 1)}, time.Now())
		}
		// Between the renewals that came at +500ms and +1s.
		time.Sleep(750 * time.Millisecond)
		synctest.Wait()
		if got := runtime.NumGoroutine() - before; got != 0 {
			t.Errorf("%d held leases, between renewals: %d goroutines more than before, want 0", n, got)
		}
		if got := len(r.times()); got != n {
			t.Errorf("%d renewals by +750ms, want %d (one each)", got, n)
		}
		for _, k := range ks {
			if _, _, err := k.Stop(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}
