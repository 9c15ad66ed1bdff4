package natslease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// heldStore is a Store whose writes wait, once armed, until the test lets
// them go: a write delayed in flight.
type heldStore struct {
	*Store
	arrived chan struct{} // receives when a write waits
	release chan struct{} // closed to let it go
}

func (h *heldStore) hold() {
	if h.arrived == nil {
		return
	}
	h.arrived <- struct{}{}
	<-h.release
}

func (h *heldStore) Add(ctx context.Context, key string, value []byte, ttl time.Duration) (string, error) {
	h.hold()
	return h.Store.Add(ctx, key, value, ttl)
}

func (h *heldStore) CompareAndSwap(ctx context.Context, key string, value []byte, version string, ttl time.Duration) (string, error) {
	h.hold()
	return h.Store.CompareAndSwap(ctx, key, value, version, ttl)
}

// TestLateWriteAfterDelete reproduces the fault test's term going
// backwards: a candidate reads the key missing and decides its term; its
// write is delayed; meanwhile another candidate creates the key with a
// higher term and an operator deletes it. The delayed write must not land
// on the new delete marker (kv.Create's fallback overwrote any marker), and
// whatever the delayed candidate ends up holding has a term above the
// deleted one. Run for a key never written and for one already deleted
// once (its marker is what the first read saw).
func TestLateWriteAfterDelete(t *testing.T) {
	for _, deletedBefore := range []bool{false, true} {
		name := "never written"
		if deletedBefore {
			name = "deleted before"
		}
		t.Run(name, func(t *testing.T) {
			srv := testserver.NewNats(t, testserver.NatsOptions{})
			admin := createBucket(t, srv)
			nc := connect(t, srv.URL())
			kv, err := jsOf(t, nc).KeyValue(ctxT(t), testBucket)
			if err != nil {
				t.Fatal(err)
			}
			st, err := NewStore(kv, nc)
			if err != nil {
				t.Fatal(err)
			}
			hs := &heldStore{Store: st, arrived: make(chan struct{}), release: make(chan struct{})}
			late, err := cachelease.New(hs, cachelease.Options{DisablePush: true})
			if err != nil {
				t.Fatal(err)
			}
			other := newBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
			e := electionName(t)
			req := func(id string) backendkit.AcquireRequest {
				return backendkit.AcquireRequest{Election: e, Identity: id, Incarnation: backendkit.NewIncarnation(), Duration: 2 * time.Second}
			}
			key := late.Key(e)
			if deletedBefore {
				if _, err := admin.Put(ctxT(t), key, []byte("x")); err != nil {
					t.Fatal(err)
				}
				if err := admin.Delete(ctxT(t), key); err != nil {
					t.Fatal(err)
				}
			}

			type result struct {
				l   backendkit.Lease
				err error
			}
			done := make(chan result, 1)
			go func() {
				l, err := late.Acquire(ctxT(t), req("late"))
				done <- result{l, err}
			}()
			<-hs.arrived // its term is decided, its write held

			won, err := other.Acquire(ctxT(t), req("other"))
			if err != nil {
				t.Fatal(err)
			}
			if err := admin.Delete(ctxT(t), key); err != nil {
				t.Fatal(err)
			}
			close(hs.release)
			// Later writes of the same call go through at once.
			go func() {
				for range hs.arrived {
				}
			}()
			r := <-done
			close(hs.arrived)
			if r.err != nil {
				t.Fatalf("the delayed Acquire: %v, want a lease over the new marker", r.err)
			}
			if r.l.Term <= won.Term {
				t.Fatalf("the delayed Acquire holds term %d, not above the deleted lease's %d", r.l.Term, won.Term)
			}
			got, err := other.Get(ctxT(t), e)
			if err != nil || got.Holder != "late" || got.Term != r.l.Term {
				t.Fatalf("the store holds %+v (%v), want late's term %d", got, err, r.l.Term)
			}
		})
	}
}

// TestAddRefusesMarker: the Store's Add creates only a key with no entry at
// all; over a delete marker it reports ErrExists, and Get names the marker
// for a compare-and-swap.
func TestAddRefusesMarker(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	kv := createBucket(t, srv)
	st, err := NewStore(kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "marker-" + electionName(t)
	if _, err := st.Get(ctxT(t), key); !errors.Is(err, cachelease.ErrNotFound) {
		t.Fatalf("Get of a key never written: %v, want ErrNotFound", err)
	}
	if e, _ := st.Get(ctxT(t), key); e.Version != "" {
		t.Fatalf("Get of a key never written names version %q", e.Version)
	}
	if _, err := kv.Put(ctxT(t), key, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctxT(t), key); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add(ctxT(t), key, []byte("w"), 0); !errors.Is(err, cachelease.ErrExists) {
		t.Fatalf("Add over a delete marker: %v, want ErrExists", err)
	}
	e, err := st.Get(ctxT(t), key)
	if !errors.Is(err, cachelease.ErrNotFound) || e.Version == "" {
		t.Fatalf("Get over a delete marker: %+v, %v; want ErrNotFound naming the marker", e, err)
	}
	if _, err := st.CompareAndSwap(ctxT(t), key, []byte("w"), e.Version, 0); err != nil {
		t.Fatalf("CompareAndSwap on the marker: %v", err)
	}
	if err := kv.Purge(ctxT(t), key); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Get(ctxT(t), key); !errors.Is(err, cachelease.ErrNotFound) || e.Version == "" {
		t.Fatalf("Get over a purge marker: %+v, %v; want ErrNotFound naming the marker", e, err)
	}
}
