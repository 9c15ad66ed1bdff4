package caslease

import (
	"context"
	"sync"
	"time"
)

// limited is a Register whose calls share MaxInFlight slots
// (Options.MaxInFlight): each call waits for a slot within its context.
type limited struct {
	Register
	slots chan struct{}
}

// take waits for a slot within ctx; release gives it back.
func (l limited) take(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l limited) release() { <-l.slots }

// Get is the Register's Get, within a slot.
func (l limited) Get(ctx context.Context, key, election string) (Entry, error) {
	if err := l.take(ctx); err != nil {
		return Entry{}, err
	}
	defer l.release()
	return l.Register.Get(ctx, key, election)
}

// Add is the Register's Add, within a slot.
func (l limited) Add(ctx context.Context, key string, rec Record, ttl time.Duration) (string, error) {
	if err := l.take(ctx); err != nil {
		return "", err
	}
	defer l.release()
	return l.Register.Add(ctx, key, rec, ttl)
}

// CompareAndSwap is the Register's CompareAndSwap, within a slot.
func (l limited) CompareAndSwap(ctx context.Context, key string, prev Entry, rec Record, ttl time.Duration) (string, error) {
	if err := l.take(ctx); err != nil {
		return "", err
	}
	defer l.release()
	return l.Register.CompareAndSwap(ctx, key, prev, rec, ttl)
}

// limitedWatcher is a Watcher whose watch holds one of limited's slots
// while it is being established: until ready, or until Watch returns.
type limitedWatcher struct {
	Watcher
	l limited
}

// Watch is the Watcher's Watch, established within a slot.
func (w limitedWatcher) Watch(ctx context.Context, prefix string, ready func(), change func(Change)) error {
	if err := w.l.take(ctx); err != nil {
		return nil // ctx is done
	}
	var once sync.Once
	defer once.Do(w.l.release)
	return w.Watcher.Watch(ctx, prefix, func() {
		once.Do(w.l.release)
		ready()
	}, change)
}
