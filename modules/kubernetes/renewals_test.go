package kubelease_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testtier"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// renewClock passes a Backend through and records when its last
// successful Acquire or Renew began: the elector measures its belief from
// that start, so the leadership it keeps ends by then plus its
// RenewDeadline whatever happens after (a partition, a deleted Lease).
// after, if not nil, runs after each successful renewal, before the
// elector sees it, with the renewal's start.
type renewClock struct {
	*kubelease.Backend
	after func(start time.Time)

	mu   sync.Mutex
	last time.Time
}

func (r *renewClock) succeeded(start time.Time) {
	r.mu.Lock()
	r.last = start
	r.mu.Unlock()
}

// lastStart is the start of the last successful Acquire or Renew.
func (r *renewClock) lastStart() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Acquire implements fxelection.Backend.
func (r *renewClock) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	start := time.Now()
	l, err := r.Backend.Acquire(ctx, req)
	if err == nil {
		r.succeeded(start)
	}
	return l, err
}

// Renew implements fxelection.Backend.
func (r *renewClock) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	start := time.Now()
	l, err := r.Backend.Renew(ctx, lease)
	if err == nil {
		r.succeeded(start)
		if r.after != nil {
			r.after(start)
		}
	}
	return l, err
}

// startedAfter checks that id's first leadership in rec began no earlier
// than end, the moment the previous leader's belief ended at the latest,
// and returns by how much (negative: the overlap).
func startedAfter(t *testing.T, rec *electiontesting.Recorder, id string, end time.Time) time.Duration {
	t.Helper()
	for _, iv := range rec.Intervals() {
		if iv.Identity == id {
			return iv.Start.Sub(end)
		}
	}
	t.Fatalf("%s never led: %+v", id, rec.Intervals())
	return 0
}

// TestClientGoFastRenewals: an fxelection leader renewing several times a
// second (RetryPeriod 100 ms) or about once a second is cut off from the
// API server by a partition right after a renewal late in a second; a
// client-go follower on the same Lease takes over only once the cut-off
// leader's belief has ended (its last renewal's start plus its
// RenewDeadline), in every partition. client-go restarts its observed
// time only when the record it compares (the spec, times in whole
// seconds) changes, so every write must change it.
func TestClientGoFastRenewals(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	const (
		lease = 3 * time.Second
		renew = 2700 * time.Millisecond // the margin LeaseDuration − RenewDeadline is 300 ms
	)
	for _, retry := range []time.Duration{100 * time.Millisecond, time.Second} {
		t.Run(fmt.Sprintf("retry %v", retry), func(t *testing.T) {
			const rounds = 3
			for i := range rounds {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					t.Parallel()
					clientGoPartitionRound(t, lease, renew, retry)
				})
			}
		})
	}
}

// clientGoPartitionRound is one partition of TestClientGoFastRenewals.
func clientGoPartitionRound(t *testing.T, lease, renew, retry time.Duration) {
	name := fmt.Sprintf("fast-%d", time.Now().UnixNano()%1e9)
	rec := &electiontesting.Recorder{}
	b, p := proxied(t)
	var armed atomic.Bool
	cut := make(chan struct{})
	clock := &renewClock{Backend: b}
	clock.after = func(start time.Time) {
		// At 100 ms the renewal must start late in its second, after
		// several renewals in the same second; at 1 s any will do.
		frac := start.Sub(start.Truncate(time.Second))
		if (retry >= time.Second || frac >= 750*time.Millisecond && frac < 900*time.Millisecond) && armed.CompareAndSwap(true, false) {
			p.Partition()
			close(cut)
		}
	}
	fx, err := fxelection.New(fxelection.Config{Name: name, Identity: "fx", Timing: fxelection.Timing{LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	fx.AddObserver(rec)
	if err := fx.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = fx.Stop(ctx)
	})
	waitFor(t, "fxelection leads", leaderLimit, fx.IsLeader)

	cg := startClientGoTimed(t, name, "cg", false, rec, lease, 2*time.Second, retry)
	never(t, "client-go led while fxelection renewed", 2*lease, cg.leading.Load)
	armed.Store(true)
	select {
	case <-cut:
	case <-time.After(time.Minute):
		t.Fatal("no renewal to partition after")
	}
	waitFor(t, "client-go takes over from the cut-off fxelection leader", lease+renew+3*retry+ioSlack, cg.leading.Load)
	end := clock.lastStart().Add(renew)
	after := startedAfter(t, rec, "cg", end)
	if after < 0 {
		t.Fatalf("client-go led %v before the cut-off fxelection leader stopped believing (lease %v, renew deadline %v, retry %v)", -after, lease, renew, retry)
	}
	t.Logf("client-go led %v after the cut-off leader's belief ended", after)
}
