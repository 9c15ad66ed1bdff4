package fxelection_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// lastWrite stands for a store such as PostgreSQL in front of the
// in-memory backend. Its Release frees the lease only if it matches the
// last write (holder, term and expires_at; releasing anything else frees
// nothing and is not an error), and the record's operations are
// serialised, as by a row lock: a release waits for a renewal in progress.
// Once hold is called, a renewal (Renew or RenewBatch) waits at the gate
// whatever its context (the server is working on it), is applied whatever
// happened to its context meanwhile, and then returns its context's error
// if that has ended: a server that commits after the client gave up. It
// hides the wrapped backend's push (the follower in these tests uses the
// memory backend itself) and batched acquisitions.
type lastWrite struct {
	fxelection.Backend
	server  chan struct{} // the record's lock (a channel: waiting on it is durably blocking under synctest)
	entered chan struct{} // a renewal waits at the gate (buffered)

	mu       sync.Mutex
	gate     chan struct{}
	released []fxelection.Lease
}

var _ backendkit.BatchRenewer = (*lastWrite)(nil)

func newLastWrite(inner fxelection.Backend) *lastWrite {
	return &lastWrite{Backend: inner, server: make(chan struct{}, 1), entered: make(chan struct{}, 1)}
}

// hold makes renewals from now on wait until the gate returned is closed.
func (s *lastWrite) hold() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
	return s.gate
}

func (s *lastWrite) waitGate() {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g == nil {
		return
	}
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-g
}

func (s *lastWrite) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	s.server <- struct{}{}
	defer func() { <-s.server }()
	s.waitGate()
	out, err := s.Backend.Renew(context.WithoutCancel(ctx), l)
	if cerr := ctx.Err(); cerr != nil {
		return fxelection.Lease{}, cerr
	}
	return out, err
}

func (s *lastWrite) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	s.server <- struct{}{}
	defer func() { <-s.server }()
	s.waitGate()
	res := s.Backend.(backendkit.BatchRenewer).RenewBatch(context.WithoutCancel(ctx), leases)
	if cerr := ctx.Err(); cerr != nil {
		for i := range res {
			res[i] = backendkit.RenewResult{Err: cerr}
		}
	}
	return res
}

func (s *lastWrite) Release(ctx context.Context, l fxelection.Lease) error {
	s.server <- struct{}{}
	defer func() { <-s.server }()
	s.mu.Lock()
	s.released = append(s.released, l)
	s.mu.Unlock()
	cur, err := s.Backend.Get(ctx, l.Election)
	switch {
	case errors.Is(err, backendkit.ErrNoLease):
		return nil
	case err != nil:
		return err
	case cur.Holder != l.Holder || cur.Term != l.Term || !cur.ExpiresAt.Equal(l.ExpiresAt):
		return nil // not the last write: frees nothing
	}
	return s.Backend.Release(ctx, l)
}

func (s *lastWrite) releases() []fxelection.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fxelection.Lease(nil), s.released...)
}

// startOn starts an elector with c on store, in a Group when grouped (its
// renewals go in batches).
func startOn(t *testing.T, c fxelection.Config, store fxelection.Backend, grouped bool) *fxelection.Elector {
	t.Helper()
	if grouped {
		return startIn(t, c, newGroup(t, store))
	}
	return start(t, c, store)
}

// Stop during a renewal tells leader work at once, lets the renewal
// finish and releases the lease as renewed, so that a store matching the
// last write on release frees it and a follower takes it at once; lease
// by lease and in a Group (batched).
func TestStopLetsRenewalInFlightFinish(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		name := "direct"
		if grouped {
			name = "group"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				store := newLastWrite(mem)
				var l log
				c := cfg("a")
				c.Callbacks.OnStartedLeading = func(ctx context.Context) { <-ctx.Done(); l.add("work done") }
				c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) { l.add("stopped") }
				a := startOn(t, c, store, grouped)
				synctest.Wait()
				if !a.IsLeader() {
					t.Fatal("a does not lead")
				}
				b := start(t, cfg("b"), mem) // woken by push on the release
				synctest.Wait()
				gate := store.hold()
				<-store.entered // a renewal is in flight
				before, err := mem.Get(context.Background(), "jobs")
				if err != nil {
					t.Fatal(err)
				}
				stopped := make(chan error, 1)
				go func() { stopped <- a.Stop(context.Background()) }()
				synctest.Wait()
				if a.IsLeader() {
					t.Error("IsLeader true after Stop began")
				}
				if got := l.events(); len(got) == 0 || got[0] != "work done" {
					t.Errorf("callbacks %v during the renewal, want leader work told at once", got)
				}
				select {
				case err := <-stopped:
					t.Fatalf("Stop returned %v while the renewal was in flight", err)
				default:
				}
				time.Sleep(100 * time.Millisecond) // a slow store
				close(gate)
				if err := <-stopped; err != nil {
					t.Fatalf("Stop: %v", err)
				}
				got := store.releases()
				if len(got) != 1 || !got[0].ExpiresAt.After(before.ExpiresAt) {
					t.Fatalf("released %+v, want the renewed lease (expiring after %v)", got, before.ExpiresAt)
				}
				synctest.Wait() // no time passes
				if !b.IsLeader() {
					cur, err := mem.Get(context.Background(), "jobs")
					t.Fatalf("b does not lead right after a's Stop; the store holds %+v (%v)", cur, err)
				}
				if got := l.events(); len(got) != 2 || got[1] != "stopped" {
					t.Fatalf("callbacks %v, want [work done stopped]", got)
				}
			})
		})
	}
}

// Stop during a renewal that never returns (a store that hangs, ignoring
// contexts) returns within its bound all the same: the renewal is cut at
// Stop's deadline. Lease by lease, the campaign loop is stuck in the call
// and Stop names it; in a Group the renewal is given up, the loop ends,
// and it is the release that finds the store stuck.
func TestStopRenewalNeverReturns(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		name := "direct"
		if grouped {
			name = "group"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				store := newLastWrite(mem)
				var l log
				c := cfg("a")
				c.Callbacks.OnStartedLeading = func(ctx context.Context) { l.add("started"); <-ctx.Done() }
				c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) { l.add("stopped") }
				a := startOn(t, c, store, grouped)
				synctest.Wait()
				if !a.IsLeader() {
					t.Fatal("a does not lead")
				}
				gate := store.hold()
				defer close(gate) // let the abandoned calls end
				<-store.entered
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				began := time.Now()
				err := a.Stop(ctx)
				took := time.Since(began)
				if limit := 100*time.Millisecond + retry + 20*time.Millisecond; took > limit {
					t.Fatalf("Stop took %v, want at most %v", took, limit)
				}
				want := "backend renew call still running"
				if grouped {
					want = "backend release call still running"
				}
				if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Stop = %v, want %q", err, want)
				}
				if a.IsLeader() || a.Status().Leading {
					t.Fatal("still leading after Stop")
				}
				if got := l.events(); len(got) != 2 || got[0] != "started" || got[1] != "stopped" {
					t.Fatalf("callbacks %v, want [started stopped]", got)
				}
				if !grouped && len(store.releases()) != 0 {
					t.Fatalf("released %+v although the loop was stuck", store.releases())
				}
			})
		})
	}
}
