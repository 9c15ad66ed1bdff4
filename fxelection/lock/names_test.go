package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestReservedKeys: '#' names a semaphore's slots ("jobs#0" is slot 0 of
// semaphore "jobs"), so no key or semaphore name may contain it: a lock
// on "jobs#0" would be a holder of that slot. Refused with ErrInvalidKey,
// naming the key and never quoting it, before any store call.
func TestReservedKeys(t *testing.T) {
	f := faultinject.New(memory.New())
	l, err := lock.New(f, fast)
	if err != nil {
		t.Fatal(err)
	}
	sem, err := l.TryAcquireSemaphore(context.Background(), "jobs", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Release(context.Background())
	calls := f.Calls(backendkit.OpAcquire)
	for _, key := range []string{"jobs#0", "jobs#1", "X#preempt", "p#shard/a"} {
		_, err := l.TryAcquire(context.Background(), key)
		if !errors.Is(err, lock.ErrInvalidKey) || !strings.Contains(err.Error(), "key") || !strings.Contains(err.Error(), "must not contain '#'") {
			t.Errorf("TryAcquire(%q) = %v, want ErrInvalidKey for the reserved character", key, err)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("TryAcquire(%q) = %v: quotes the key", key, err)
		}
		// Bounded: were the key a semaphore's slot, Acquire would wait for it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = l.Acquire(ctx, key)
		cancel()
		if !errors.Is(err, lock.ErrInvalidKey) {
			t.Errorf("Acquire(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := l.TryAcquireSemaphore(context.Background(), key, 2); !errors.Is(err, lock.ErrInvalidKey) {
			t.Errorf("TryAcquireSemaphore(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if n := f.Calls(backendkit.OpAcquire) - calls; n != 0 {
		t.Errorf("%d store calls for reserved keys, want 0", n)
	}
}
