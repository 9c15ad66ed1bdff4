package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestSemaphore: 10 Lockers take a semaphore of 3 20 times each: never 4
// holders at once, every slot used, and each slot's terms strictly
// increase.
func TestSemaphore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const clients, rounds, n = 10, 20, 3
		store := memory.New()
		var (
			inside, most atomic.Int32
			mu           sync.Mutex
			terms        = map[int][]uint64{}
			wg           sync.WaitGroup
		)
		for c := range clients {
			l := newLocker(t, store, "client-"+string(rune('a'+c)))
			wg.Go(func() {
				for range rounds {
					lk, err := l.AcquireSemaphore(context.Background(), "workers", n)
					if err != nil {
						t.Error(err)
						return
					}
					now := inside.Add(1)
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
					mu.Lock()
					terms[lk.Slot()] = append(terms[lk.Slot()], lk.Term())
					mu.Unlock()
					if lk.Key() != "workers" || lk.Slot() < 0 || lk.Slot() >= n {
						t.Errorf("Key %q Slot %d, want workers and 0..%d", lk.Key(), lk.Slot(), n-1)
					}
					time.Sleep(30 * time.Millisecond)
					inside.Add(-1)
					release(t, lk)
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m > n {
			t.Errorf("%d holders at once, want at most %d", m, n)
		}
		if len(terms) != n {
			t.Errorf("slots used: %d, want %d", len(terms), n)
		}
		for slot, ts := range terms {
			for i := 1; i < len(ts); i++ {
				if ts[i] <= ts[i-1] {
					t.Errorf("slot %d: term %d after %d, want strictly increasing", slot, ts[i], ts[i-1])
				}
			}
		}
	})
}

// TestSemaphoreKilledHolder: a holder cut off from the store keeps its
// slot in the store until its lease expires; a TryAcquireSemaphore before
// then finds every slot held (ErrLocked), one after takes the slot.
func TestSemaphoreKilledHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		cut := faultinject.New(store)
		dead, live := newLocker(t, cut, "dead"), newLocker(t, store, "live")
		var held []*lock.Lock
		for range 2 {
			lk, err := live.TryAcquireSemaphore(context.Background(), "s", 3)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, lk)
		}
		victim, err := dead.TryAcquireSemaphore(context.Background(), "s", 3)
		if err != nil {
			t.Fatal(err)
		}
		cut.Partition(true) // killed: no renewal, no release
		expires := victim.Lease().ExpiresAt
		_, err = live.TryAcquireSemaphore(context.Background(), "s", 3)
		var he *backendkit.HeldError
		if !errors.Is(err, lock.ErrLocked) || !errors.As(err, &he) {
			t.Fatalf("all slots held: %v, want ErrLocked wrapping a *HeldError", err)
		}
		for {
			lk, err := live.TryAcquireSemaphore(context.Background(), "s", 3)
			if err == nil {
				if time.Now().Before(expires) {
					t.Errorf("slot taken at %v, before the killed holder's lease expired at %v", time.Now(), expires)
				}
				if lk.Slot() != victim.Slot() || lk.Term() <= victim.Term() {
					t.Errorf("took slot %d term %d, want the killed holder's slot %d above term %d", lk.Slot(), lk.Term(), victim.Slot(), victim.Term())
				}
				held = append(held, lk)
				break
			}
			if !errors.Is(err, lock.ErrLocked) {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if cause := context.Cause(victim.Context()); !errors.Is(cause, lock.ErrLost) {
			t.Errorf("killed holder's Context cause %v, want ErrLost", cause)
		}
		for _, lk := range held {
			release(t, lk)
		}
		cut.Partition(false)
		_ = victim.Release(context.Background())
	})
}

// TestSemaphoreWakesWaiter: a waiter on a full semaphore is woken by the
// release of any slot (push) and takes it without waiting for a poll.
func TestSemaphoreWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := newLocker(t, store, "a"), newLocker(t, store, "b")
		var held []*lock.Lock
		for range 4 {
			lk, err := a.AcquireSemaphore(context.Background(), "s", 4)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, lk)
		}
		got := make(chan *lock.Lock, 1)
		go func() {
			lk, err := b.AcquireSemaphore(context.Background(), "s", 4)
			if err != nil {
				t.Error(err)
			}
			got <- lk
		}()
		time.Sleep(5 * time.Second) // many polls: still all held
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("acquired a slot of a full semaphore")
		default:
		}
		released := time.Now()
		release(t, held[2])
		lk := <-got
		if d := time.Since(released); d != 0 {
			t.Errorf("waiter took the slot %v after the release, want at once (push)", d)
		}
		if lk.Slot() != held[2].Slot() {
			t.Errorf("took slot %d, want the released slot %d", lk.Slot(), held[2].Slot())
		}
		for _, h := range append(held, lk) {
			release(t, h)
		}
	})
}

// TestSemaphoreInvalid: sizes out of range and names whose slot records
// break the key rule are refused before any store call.
func TestSemaphoreInvalid(t *testing.T) {
	f := faultinject.New(memory.New())
	l, err := lock.New(f, fast)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, -1, lock.MaxSemaphore + 1} {
		if _, err := l.TryAcquireSemaphore(context.Background(), "s", n); !errors.Is(err, lock.ErrInvalidSemaphore) {
			t.Errorf("size %d: %v, want ErrInvalidSemaphore", n, err)
		}
	}
	long := strings.Repeat("x", backendkit.MaxNameLen-1) // fits as a lock, not with "#0"
	for _, name := range []string{"", "bad\x00name", long} {
		if _, err := l.AcquireSemaphore(context.Background(), name, 2); !errors.Is(err, lock.ErrInvalidKey) {
			t.Errorf("name %.20q: %v, want ErrInvalidKey", name, err)
		}
	}
	if n := f.Calls(backendkit.OpAcquire); n != 0 {
		t.Errorf("%d store calls for invalid arguments, want 0", n)
	}
}
