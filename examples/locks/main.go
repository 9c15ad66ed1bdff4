// Command locks shows fenced locks and a semaphore: four workers take
// turns on one lock, each doing a read-modify-write of a counter guarded
// by the lock's fencing term, and three of them at most run a job at once
// under a semaphore. The workers share an in-memory backend here; in
// production each is a process on the same store (Redis, Postgres, …).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// counter is an external resource that refuses writes carrying a term
// lower than the highest it has seen (a fencing guard).
type counter struct {
	mu      sync.Mutex
	highest uint64
	value   int
}

var errStale = errors.New("stale fencing term")

func (c *counter) increment(term uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if term < c.highest {
		return errStale
	}
	c.highest, c.value = term, c.value+1
	return nil
}

func run(ctx context.Context, out io.Writer) error {
	backend := memory.New()
	var (
		c            counter
		running, top atomic.Int32
		wg           sync.WaitGroup
		errs         = make(chan error, 8)
	)
	for i := range 4 {
		locker, err := lock.New(backend, lock.Options{
			Identity: fmt.Sprintf("worker-%d", i),
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   100 * time.Millisecond,
			},
		})
		if err != nil {
			return err
		}
		defer locker.Close(ctx) // releases whatever is still held
		wg.Go(func() {
			for range 5 {
				if err := critical(ctx, locker, &c); err != nil {
					errs <- err
					return
				}
				if err := job(ctx, locker, &running, &top); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Fprintf(out, "counter: %d (20 fenced increments)\n", c.value)
	fmt.Fprintf(out, "at most %d jobs at once (semaphore of 3)\n", top.Load())
	return nil
}

// critical increments the counter under the lock "counter".
func critical(ctx context.Context, locker *lock.Locker, c *counter) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // bounds the wait only
	defer cancel()
	l, err := locker.Acquire(wctx, "counter")
	if err != nil {
		return err
	}
	defer l.Release(context.WithoutCancel(ctx))
	// l.Context() ends before another holder can take the lock; the term
	// protects the write even if this process was paused past that. Guards
	// of package fence (pgfence, redisfence) read it from the context.
	tok, err := fence.FromContext(l.Context())
	if err != nil {
		return err
	}
	return c.increment(tok.Term) // tok.Term == l.Term()
}

// job runs under one of the 3 slots of the semaphore "reports".
func job(ctx context.Context, locker *lock.Locker, running, top *atomic.Int32) error {
	l, err := locker.AcquireSemaphore(ctx, "reports", 3)
	if err != nil {
		return err
	}
	defer l.Release(context.WithoutCancel(ctx))
	n := running.Add(1)
	for m := top.Load(); n > m && !top.CompareAndSwap(m, n); m = top.Load() {
	}
	time.Sleep(20 * time.Millisecond) // the job
	running.Add(-1)
	return nil
}
