package electiontest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// The checker must catch what it claims to: deliberately broken backends
// over the in-memory one, each with one bug the review found in a real
// backend, fail it; the in-memory backend itself passes.

func TestLinearizableMemoryPasses(t *testing.T) {
	m := memory.New()
	_, v, _ := runLinearizable(t, func(*testing.T) fxelection.Backend { return m }, LinearizableOptions{})
	if v.Result != porcupine.Ok || len(v.Problems) > 0 {
		t.Fatalf("in-memory backend: %s %v\n%s", v.Result, v.Problems, v.Report)
	}
}

func TestLinearizableCatchesBrokenBackends(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*memory.Backend) fxelection.Backend
	}{
		// etcd's bug: the same identity gets its old term back after its
		// own release.
		{"TermKeptAcrossRelease", func(m *memory.Backend) fxelection.Backend {
			return &keepTermBackend{Backend: m, released: map[string]fxelection.Lease{}, fake: map[string]termMap{}}
		}},
		// memcached's bug: Get reports a version no call's result accounts for.
		{"StaleVersion", func(m *memory.Backend) fxelection.Backend {
			return &staleVersionBackend{Backend: m, prev: map[string]string{}}
		}},
		// A backend that ignores incarnations: the same identity keeps its
		// term whatever incarnation asks.
		{"IgnoresIncarnation", func(m *memory.Backend) fxelection.Backend {
			return ignoreIncarnation{m}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.wrap(memory.New())
			_, v, _ := runLinearizable(t, func(*testing.T) fxelection.Backend { return b }, LinearizableOptions{noVisual: true})
			if v.Result != porcupine.Illegal && len(v.Problems) == 0 {
				t.Fatalf("broken backend passed: %s (%d calls: %s)", v.Result, v.Ops, v.Outcomes)
			}
			t.Logf("caught: %s %v\n%s", v.Result, v.Problems, v.Report)
			if v.Result == porcupine.Illegal && !strings.Contains(v.Report, "cannot follow") {
				t.Fatalf("report without the offending calls:\n%s", v.Report)
			}
		})
	}
}

// ignoreIncarnation drops the request's incarnation.
type ignoreIncarnation struct{ *memory.Backend }

func (b ignoreIncarnation) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	inc := req.Incarnation
	req.Incarnation = ""
	l, err := b.Backend.Acquire(ctx, req)
	if err == nil {
		l.Incarnation = inc
	}
	return l, err
}

// staleVersionBackend reports, from Get, the version the record had before
// its last write by Acquire or Renew.
type staleVersionBackend struct {
	*memory.Backend
	mu   sync.Mutex
	prev map[string]string // election → the version before the current one
	cur  map[string]string
}

func (b *staleVersionBackend) note(l fxelection.Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		b.cur = map[string]string{}
	}
	b.prev[l.Election], b.cur[l.Election] = b.cur[l.Election], l.Version
}

func (b *staleVersionBackend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.Backend.Acquire(ctx, req)
	if err == nil {
		b.note(l)
	}
	return l, err
}

func (b *staleVersionBackend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	l, err := b.Backend.Renew(ctx, lease)
	if err == nil {
		b.note(l)
	}
	return l, err
}

func (b *staleVersionBackend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	l, err := b.Backend.Get(ctx, election)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && l.Version == b.cur[election] && b.prev[election] != "" {
		l.Version = b.prev[election]
	}
	return l, err
}

// keepTermBackend hands a holder that released its lease its old term
// again at its next acquisition, consistently: it translates the real
// term to the reused one in everything it returns, and back in what it
// is given.
type keepTermBackend struct {
	*memory.Backend
	mu       sync.Mutex
	released map[string]fxelection.Lease // election → the last lease its holder released
	fake     map[string]termMap
}

// termMap is one election's current translation: the store's term real
// is reported as shown.
type termMap struct{ real, shown uint64 }

func (b *keepTermBackend) show(l fxelection.Lease) fxelection.Lease {
	if m, ok := b.fake[l.Election]; ok && l.Term == m.real {
		l.Term = m.shown
	}
	return l
}

func (b *keepTermBackend) unshow(l fxelection.Lease) fxelection.Lease {
	if m, ok := b.fake[l.Election]; ok && l.Term == m.shown {
		l.Term = m.real
	}
	return l
}

func (b *keepTermBackend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.Backend.Acquire(ctx, req)
	if he, ok := err.(*backendkit.HeldError); ok {
		return fxelection.Lease{}, &backendkit.HeldError{Holder: b.show(he.Holder)}
	}
	if err != nil {
		return l, err
	}
	if r, ok := b.released[req.Election]; ok && r.Holder == req.Identity && l.Term > r.Term {
		b.fake[req.Election] = termMap{real: l.Term, shown: r.Term}
		delete(b.released, req.Election)
	}
	return b.show(l), nil
}

func (b *keepTermBackend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.Backend.Renew(ctx, b.unshow(lease))
	if err != nil {
		return l, err
	}
	return b.show(l), nil
}

func (b *keepTermBackend) Release(ctx context.Context, lease fxelection.Lease) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	real := b.unshow(lease)
	cur, err := b.Backend.Get(ctx, lease.Election)
	if err := b.Backend.Release(ctx, real); err != nil {
		return err
	}
	if err == nil && cur.Holder == real.Holder && cur.Term == real.Term {
		if after, err := b.Backend.Get(ctx, lease.Election); err != nil || after.Term != cur.Term {
			b.released[lease.Election] = lease
		}
	}
	return nil
}

func (b *keepTermBackend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.Backend.Get(ctx, election)
	if err != nil {
		return l, err
	}
	return b.show(l), nil
}

// partialVersions reports, from Get and in HeldError, only a part of the
// version, the same for every write by one holder, as the Azure Blob
// backend reports its lease id alone.
type partialVersions struct{ *memory.Backend }

func (b partialVersions) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.Backend.Acquire(ctx, req)
	if he, ok := err.(*backendkit.HeldError); ok {
		h := he.Holder
		h.Version = "id-" + h.Holder
		return l, &backendkit.HeldError{Holder: h}
	}
	return l, err
}

func (b partialVersions) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	l, err := b.Backend.Get(ctx, election)
	if err == nil {
		l.Version = "id-" + l.Holder
	}
	return l, err
}

// A backend whose reads report partial versions passes with
// PartialReadVersions and fails without it.
func TestLinearizablePartialReadVersions(t *testing.T) {
	b := partialVersions{memory.New()}
	nb := func(*testing.T) fxelection.Backend { return b }
	if _, v, _ := runLinearizable(t, nb, LinearizableOptions{PartialReadVersions: true}); v.Result != porcupine.Ok || len(v.Problems) > 0 {
		t.Fatalf("partial read versions with PartialReadVersions: %s %v\n%s", v.Result, v.Problems, v.Report)
	}
	if _, v, _ := runLinearizable(t, nb, LinearizableOptions{noVisual: true}); v.Result != porcupine.Illegal {
		t.Fatalf("partial read versions without PartialReadVersions: %s", v.Result)
	}
	// The in-memory backend passes in that mode too.
	m := memory.New()
	if _, v, _ := runLinearizable(t, func(*testing.T) fxelection.Backend { return m }, LinearizableOptions{PartialReadVersions: true}); v.Result != porcupine.Ok {
		t.Fatalf("in-memory backend with PartialReadVersions: %s\n%s", v.Result, v.Report)
	}
}
