package fxelection

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// gatedBatches is a store whose RenewBatch and AcquireBatch calls each
// wait for a token on gate, recording the kind of every call in the order
// made and the most acquisition batches in flight at once.
type gatedBatches struct {
	gate chan struct{}

	mu        sync.Mutex
	calls     []string
	acquiring int
	most      int
}

func (g *gatedBatches) RenewBatch(ctx context.Context, leases []Lease) []backendkit.RenewResult {
	g.mu.Lock()
	g.calls = append(g.calls, "renew")
	g.mu.Unlock()
	<-g.gate
	out := make([]backendkit.RenewResult, len(leases))
	for i, l := range leases {
		out[i].Lease = l
	}
	return out
}

func (g *gatedBatches) AcquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	g.mu.Lock()
	g.calls = append(g.calls, "acquire")
	g.acquiring++
	g.most = max(g.most, g.acquiring)
	g.mu.Unlock()
	<-g.gate
	g.mu.Lock()
	g.acquiring--
	g.mu.Unlock()
	out := make([]backendkit.AcquireResult, len(reqs))
	for i, r := range reqs {
		out[i].Lease = Lease{Election: r.Election, Holder: r.Identity, Term: 1}
	}
	return out
}

// plainWait is a waitContext that is never cancelled.
type plainWait struct{}

func (plainWait) Err() error                          { return nil }
func (plainWait) AfterFunc(func()) (stop func() bool) { return func() bool { return true } }

// TestBatcherRenewalsFirst checks the batcher's scheduling contract: at
// most maxAcquiring batches of acquisitions are in flight at once, and a
// renewal queued while acquisitions wait goes out before them, on a sender
// of its own, without waiting for the acquisition batches in flight.
func TestBatcherRenewalsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatedBatches{gate: make(chan struct{})}
		bt := &batcher{b: g, a: g, kind: "gated"}
		deadline := time.Now().Add(time.Hour)
		var done sync.WaitGroup
		acquire := func(name string) {
			done.Add(1)
			bt.acquire(context.Background(), deadline, backendkit.AcquireRequest{Election: name, Identity: "me"},
				func(l Lease, err error) {
					if err != nil || l.Holder != "me" {
						t.Errorf("acquisition of %s: %+v, %v", name, l, err)
					}
					done.Done()
				}, nil)
			synctest.Wait()
		}
		for _, name := range []string{"a1", "a2", "a3", "a4"} {
			acquire(name) // one batch each: the first two go out, the others wait
		}
		renewed := make(chan error, 1)
		go func() {
			var out Lease
			renewed <- bt.renew(plainWait{}, deadline, &Lease{Election: "r", Holder: "me", Term: 1}, &out)
		}()
		synctest.Wait()
		g.mu.Lock()
		calls, most := append([]string(nil), g.calls...), g.most
		g.mu.Unlock()
		want := []string{"acquire", "acquire", "renew"}
		if len(calls) != len(want) || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
			t.Fatalf("calls in flight %v, want %v: the renewal must not wait behind acquisitions", calls, want)
		}
		if most > maxAcquiring {
			t.Fatalf("%d acquisition batches in flight at once, want at most %d", most, maxAcquiring)
		}
		// Let everything through: the waiting acquisitions go in later
		// batches, never more than maxAcquiring at once.
		go func() {
			for {
				select {
				case g.gate <- struct{}{}:
				case <-t.Context().Done():
					return
				}
			}
		}()
		if err := <-renewed; err != nil {
			t.Fatalf("renewal: %v", err)
		}
		done.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.most > maxAcquiring {
			t.Fatalf("%d acquisition batches in flight at once, want at most %d", g.most, maxAcquiring)
		}
	})
}

// TestAcquireGivenUp checks that an acquisition whose context ends before
// its batch answers gets the context's error at once, and that a lease its
// batch won all the same goes to late.
func TestAcquireGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatedBatches{gate: make(chan struct{})}
		bt := &batcher{b: g, a: g, kind: "gated"}
		ctx, cancel := context.WithCancel(context.Background())
		var got error
		late := make(chan Lease, 1)
		bt.acquire(ctx, time.Now().Add(time.Hour), backendkit.AcquireRequest{Election: "x", Identity: "me"},
			func(_ Lease, err error) { got = err }, func(l Lease) { late <- l })
		synctest.Wait() // in flight
		cancel()
		synctest.Wait()
		if !errors.Is(got, context.Canceled) {
			t.Fatalf("given up: %v, want context.Canceled", got)
		}
		g.gate <- struct{}{}
		if l := <-late; l.Holder != "me" {
			t.Fatalf("late lease %+v", l)
		}
	})
}

// TestRecampaignWait checks the wait after leaderships lost in a row by
// the renew deadline: RetryPeriod, doubling per loss, never above
// LeaseDuration−RenewDeadline (or RetryPeriod when that is smaller), and
// the spread drawn from the upper half.
func TestRecampaignWait(t *testing.T) {
	retry := 2 * time.Second
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 5 * time.Second, 16: 5 * time.Second} {
		if got := recampaignWait(n, retry, 5*time.Second); got != want {
			t.Errorf("recampaignWait(%d) = %v, want %v", n, got, want)
		}
	}
	if got := recampaignWait(3, retry, time.Second); got != retry {
		t.Errorf("with a limit below RetryPeriod: %v, want %v", got, retry)
	}
	for range 1000 {
		if d := spread(4 * time.Second); d < 2*time.Second || d >= 4*time.Second {
			t.Fatalf("spread(4s) = %v, want in [2s, 4s)", d)
		}
	}
}
