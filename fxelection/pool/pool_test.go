package pool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
	"github.com/fxelection/fxelection/internal/storetest"
)

// TestPoolFakeTime runs CheckPool on the in-memory backend in fake time,
// with one RetryPeriod of slack on its bounds.
func TestPoolFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		// Slack of one RetryPeriod: workers started at one instant race in
		// an order the scheduler picks. Measured over 300 runs: the spread
		// took at most three RetryPeriods in 299, 3.6 in one; joins took
		// at most 3.75 of their five.
		storetest.CheckPool(t, func(*testing.T) fxelection.Backend { return store }, storetest.PoolOptions{Slack: 500 * time.Millisecond})
	})
}

// TestStopBoundedWhenWedged: Stop returns within its context's deadline
// (plus the electors' own bounds) while a round of the loop is stuck in a
// backend call that ignores its context, on fake time.
func TestStopBoundedWhenWedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := faultinject.New(memory.New())
		p, err := pool.New(pool.Config{
			Name: "wedged", Shards: []string{"a", "b"},
			Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
		}, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		f.Wedge(backendkit.OpGet, true) // the next round's member scan hangs
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		began := time.Now()
		err = p.Stop(ctx)
		took := time.Since(began)
		f.Wedge(backendkit.OpGet, false)
		if err == nil || took > time.Second+3*time.Second {
			t.Fatalf("Stop with a wedged round: %v after %v, want an error within 1s plus the electors' bounds", err, took)
		}
		t.Logf("Stop returned after %v: %v", took, err)
	})
}

// ownSlotUnreadable fails every read of the pool's member slot 0 as a
// store failure would (a round cut short by Stop fails it the same way).
type ownSlotUnreadable struct {
	fxelection.Backend
	slot string
}

func (b ownSlotUnreadable) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	if election == b.slot {
		return fxelection.Lease{}, context.Canceled
	}
	return b.Backend.Get(ctx, election)
}

// TestOwnSlotUnreadable: a round whose scan reads no live member, not even
// this worker's own slot, still counts this worker (it used to divide by
// zero), and the worker takes every shard alone.
func TestOwnSlotUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ownSlotUnreadable{Backend: memory.New(), slot: "blind#member/0"}
		p, err := pool.New(pool.Config{
			Name: "blind", Shards: []string{"a", "b", "c"},
			Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
		}, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		st := p.Status()
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if st.Owned != 3 || st.Target != 3 || st.Members != 0 {
			t.Fatalf("status %+v, want 3 shards owned, a target of 3 and no member seen", st)
		}
	})
}
