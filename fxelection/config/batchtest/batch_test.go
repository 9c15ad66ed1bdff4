package batchtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(Counter{}) }

// counts are what a Counter module's backend saw, by the module's name.
type counts struct {
	renews     atomic.Int64 // Renew calls
	batches    atomic.Int64 // RenewBatch calls
	batched    atomic.Int64 // leases renewed through RenewBatch
	largest    atomic.Int64 // leases in the largest RenewBatch call
	subscribed atomic.Int64 // Subscribe calls
}

var countsByName sync.Map // string → *counts

func countsFor(name string) *counts {
	c, _ := countsByName.LoadOrStore(name, &counts{})
	return c.(*counts)
}

// Counter is a test backend module over an in-memory store that counts the
// calls electors make: with "batch" its backend implements
// backendkit.BatchRenewer, without it only Backend and Notifier.
type Counter struct {
	Name  string `json:"name" config:"required"`
	Batch bool   `json:"batch,omitempty"`
}

func (Counter) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.backends.counter", Doc: "test module counting calls", New: func() modkit.Module { return new(Counter) }}
}

func (c *Counter) Backend() (fxelection.Backend, error) {
	b := &countingBackend{Backend: memory.New(), c: countsFor(c.Name)}
	if c.Batch {
		return &batchingBackend{b}, nil
	}
	return b, nil
}

// countingBackend counts Renew and Subscribe calls; it does not batch (the
// embedded memory.Backend's RenewBatch is shadowed by an unexported field).
type countingBackend struct {
	*memory.Backend
	c          *counts
	RenewBatch struct{} // hides memory.Backend.RenewBatch from the method set
}

func (b *countingBackend) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	b.c.renews.Add(1)
	return b.Backend.Renew(ctx, l)
}

func (b *countingBackend) Subscribe(election string, wake func()) func() {
	b.c.subscribed.Add(1)
	return b.Backend.Subscribe(election, wake)
}

// batchingBackend is a countingBackend that batches.
type batchingBackend struct{ *countingBackend }

func (b *batchingBackend) RenewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	b.c.batches.Add(1)
	b.c.batched.Add(int64(len(leases)))
	for {
		cur := b.c.largest.Load()
		if int64(len(leases)) <= cur || b.c.largest.CompareAndSwap(cur, int64(len(leases))) {
			break
		}
	}
	return b.Backend.RenewBatch(ctx, leases)
}

var (
	_ backendkit.BatchRenewer = (*batchingBackend)(nil)
	_ backendkit.Notifier     = (*countingBackend)(nil)
)

// TestCountingBackendCapabilities checks the test module itself: the
// verdicts below mean nothing if the non-batching backend batched.
func TestCountingBackendCapabilities(t *testing.T) {
	plain, _ := (&Counter{Name: t.Name()}).Backend()
	if _, ok := plain.(backendkit.BatchRenewer); ok {
		t.Fatal("the non-batching counter backend implements BatchRenewer")
	}
	batching, _ := (&Counter{Name: t.Name(), Batch: true}).Backend()
	if _, ok := batching.(backendkit.BatchRenewer); !ok {
		t.Fatal("the batching counter backend does not implement BatchRenewer")
	}
}

// manyElections is a document of n elections on one shared counter module.
func manyElections(name string, n int, batch bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"backends": {"shared": {"module": "fxelection.backends.counter", "name": %q, "batch": %v}}, "elections": [`, name, batch)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name": "e%d", "identity": "me", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "200ms", "backend": "shared"}`, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// electors collects every elector of a built document.
type allElectors struct {
	fx.In
	All []*fxelection.Elector `group:"fxelection.electors"`
}

// runUntil starts the app of doc, waits (at most a minute, polling) until
// done says so, and stops it.
func runUntil(t *testing.T, raw []byte, done func([]*fxelection.Elector) bool) {
	t.Helper()
	opt, err := config.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	var es allElectors
	app := fx.New(fx.NopLogger, opt, fx.Populate(&es))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for limit := time.Now().Add(time.Minute); !done(es.All); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatal("condition not reached within a minute")
		}
	}
}

func leading(es []*fxelection.Elector) int {
	n := 0
	for _, e := range es {
		if e.IsLeader() {
			n++
		}
	}
	return n
}

// TestConfiguredElectionsBatch: elections from one document on one module
// whose backend batches renew through RenewBatch, in shared batches, and
// never through Renew (before the fix, Build's wrapper hid RenewBatch: every
// renewal was a Renew call).
func TestConfiguredElectionsBatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 500
	c := countsFor(t.Name())
	runUntil(t, manyElections(t.Name(), n, true), func(es []*fxelection.Elector) bool {
		if len(es) != n {
			t.Fatalf("%d electors, want %d", len(es), n)
		}
		return leading(es) == n && c.renews.Load()+c.batched.Load() >= 3*n
	})
	renews, batches, batched := c.renews.Load(), c.batches.Load(), c.batched.Load()
	t.Logf("%d Renew calls; %d leases renewed in %d RenewBatch calls (largest %d)", renews, batched, batches, c.largest.Load())
	if renews != 0 {
		t.Errorf("%d Renew calls, want none: the backend batches", renews)
	}
	// Elections sharing one module share one batcher: a batcher per
	// election would make one call per renewal. With 500 elections on 64
	// slots of a RetryPeriod, a slot holds about 8 renewals.
	if batches*2 > batched || c.largest.Load() < 4 {
		t.Errorf("%d leases in %d RenewBatch calls: not shared batches", batched, batches)
	}
	if c.subscribed.Load() == 0 {
		t.Error("no Subscribe call reached the backend: push wake-up no longer passes through")
	}
}

// TestConfiguredElectionsWithoutBatching: on a backend that cannot batch,
// the wrapper renews each lease with Renew, and every election keeps
// leading through many renewals.
func TestConfiguredElectionsWithoutBatching(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 50
	c := countsFor(t.Name())
	runUntil(t, manyElections(t.Name(), n, false), func(es []*fxelection.Elector) bool {
		return leading(es) == n && c.renews.Load() >= 5*n
	})
	if c.batches.Load() != 0 {
		t.Errorf("%d RenewBatch calls on a backend without it", c.batches.Load())
	}
}
