package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/wake"
	"go.uber.org/fx"
)

// Backend is an in-process backendkit.Backend: leases live in this process's
// memory and expire by its monotonic clock. Every operation is atomic and it
// is safe for concurrent use. Terms are monotonic for the life of the value.
// It supports push wake-up (backendkit.Notifier) and batched renewals (backendkit.BatchRenewer).
//
// It serves single-process applications (several goroutines or components
// electing one of themselves), demos and users' unit tests. It cannot
// coordinate separate processes. Nothing but this process writes its
// leases, so it never meets a foreign record (backendkit.ErrInvalidRecord).
type Backend struct {
	// Leases are kept as values, not encoded, in a map guarded by mu.
	mu      sync.Mutex
	entries map[string]*memEntry
	version uint64
	hub     *wake.Hub
}

type memEntry struct {
	lease    backendkit.Lease // the holder's lease; Holder is empty when free
	held     bool             // lease is set (it may have expired since)
	garbage  bool             // an unreadable record, for the conformance suite
	version  uint64           // changes on every write
	expires  time.Time        // local monotonic clock
	lastTerm uint64           // survives release
}

var (
	_ backendkit.Backend       = (*Backend)(nil)
	_ backendkit.Notifier      = (*Backend)(nil)
	_ backendkit.NamedBackend  = (*Backend)(nil)
	_ backendkit.BatchRenewer  = (*Backend)(nil)
	_ backendkit.BatchAcquirer = (*Backend)(nil)
	_ backendkit.Transferer    = (*Backend)(nil)
)

// New returns an empty in-memory backend.
func New() *Backend {
	return &Backend{entries: map[string]*memEntry{}, hub: wake.New(nil)}
}

// BackendName returns "memory".
func (m *Backend) BackendName() string { return "memory" }

// current returns the live record of election, if any; the caller holds m.mu.
func (m *Backend) current(election string) (*memEntry, backendkit.Lease, bool, error) {
	ent := m.entries[election]
	if ent == nil {
		ent = &memEntry{}
		m.entries[election] = ent
	}
	switch {
	case !time.Now().Before(ent.expires):
		return ent, backendkit.Lease{}, false, nil
	case ent.garbage:
		return ent, backendkit.Lease{}, false, fmt.Errorf("%w: unreadable record", backendkit.ErrInvalidRecord)
	case !ent.held:
		return ent, backendkit.Lease{}, false, nil
	}
	l := ent.lease
	l.Version = strconv.FormatUint(ent.version, 10)
	l.ExpiresAt = ent.expires
	return ent, l, true, nil
}

// write stores l, which the caller has cloned (the entry owns its
// metadata), and returns a copy of its own.
func (m *Backend) write(ent *memEntry, l backendkit.Lease) (backendkit.Lease, error) {
	m.version++
	l.Version, l.ExpiresAt = "", time.Time{}
	ent.lease, ent.held, ent.garbage = l, true, false
	ent.version, ent.expires = m.version, time.Now().Add(l.Duration)
	out := l.Clone()
	out.Version = strconv.FormatUint(ent.version, 10)
	out.ExpiresAt = ent.expires
	return out, nil
}

// Acquire implements backendkit.Backend.
func (m *Backend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (backendkit.Lease, error) {
	if err := ctx.Err(); err != nil {
		return backendkit.Lease{}, err
	}
	if err := req.Validate(); err != nil {
		return backendkit.Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acquire(req)
}

// AcquireBatch implements backendkit.BatchAcquirer: every request made as
// Acquire would, in order, under one acquisition of the lock.
func (m *Backend) AcquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	out := make([]backendkit.AcquireResult, len(reqs))
	if err := ctx.Err(); err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, req := range reqs {
		if err := req.Validate(); err != nil {
			out[i].Err = err
			continue
		}
		out[i].Lease, out[i].Err = m.acquire(req)
	}
	return out
}

// acquire is Acquire with m.mu held. It is a function of its own so that
// the frame of a caller waiting for the lock stays small: at start-up many
// campaign goroutines wait there at once, and their stacks are what they
// cost.
func (m *Backend) acquire(req backendkit.AcquireRequest) (backendkit.Lease, error) {
	ent, cur, held, err := m.current(req.Election)
	if err != nil {
		return backendkit.Lease{}, err
	}
	l := backendkit.Lease{Election: req.Election, Holder: req.Identity, Metadata: req.Metadata, Duration: req.Duration, Incarnation: req.Incarnation}
	switch {
	case held && cur.Holder != req.Identity:
		return backendkit.Lease{}, &backendkit.HeldError{Holder: cur.Clone()}
	case held && req.Continues(cur):
		l.Term, l.AcquiredAt = cur.Term, cur.AcquiredAt
	case ent.lastTerm >= backendkit.MaxTerm:
		return backendkit.Lease{}, backendkit.ErrTermExhausted
	default:
		ent.lastTerm++
		l.Term, l.AcquiredAt = ent.lastTerm, time.Now()
	}
	return m.write(ent, l.Clone())
}

// Renew implements backendkit.Backend.
func (m *Backend) Renew(ctx context.Context, lease backendkit.Lease) (backendkit.Lease, error) {
	if err := ctx.Err(); err != nil {
		return backendkit.Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renew(lease)
}

// RenewBatch implements backendkit.BatchRenewer: every lease renewed as Renew would,
// under one acquisition of the lock.
func (m *Backend) RenewBatch(ctx context.Context, leases []backendkit.Lease) []backendkit.RenewResult {
	out := make([]backendkit.RenewResult, len(leases))
	if err := ctx.Err(); err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, l := range leases {
		out[i].Lease, out[i].Err = m.renew(l)
	}
	return out
}

// renew is Renew with m.mu held.
func (m *Backend) renew(lease backendkit.Lease) (backendkit.Lease, error) {
	if ent := m.entries[lease.Election]; ent != nil && ent.held && !ent.garbage &&
		time.Now().Before(ent.expires) && ent.lease.Holder == lease.Holder &&
		ent.lease.Term == lease.Term && ent.lease.Duration == lease.Duration {
		// Ours, and the record does not change: extend it without copying
		// it. The caller's lease is the record's content.
		m.version++
		ent.version, ent.expires = m.version, time.Now().Add(lease.Duration)
		lease.Version, lease.ExpiresAt = strconv.FormatUint(ent.version, 10), ent.expires
		return lease, nil
	}
	ent, cur, held, err := m.current(lease.Election)
	if err != nil {
		return backendkit.Lease{}, err
	}
	if !held || cur.Holder != lease.Holder || cur.Term != lease.Term {
		return backendkit.Lease{}, backendkit.ErrLeaseLost
	}
	cur.Duration = lease.Duration
	return m.write(ent, cur.Clone())
}

// Release implements backendkit.Backend.
func (m *Backend) Release(ctx context.Context, lease backendkit.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ent, cur, held, err := m.current(lease.Election)
	if err != nil || !held || cur.Holder != lease.Holder || cur.Term != lease.Term {
		return nil // not ours (or unreadable, so not ours either)
	}
	m.version++
	ent.lease, ent.held, ent.version = backendkit.Lease{}, false, m.version
	m.hub.Wake(lease.Election)
	return nil
}

// Transfer implements backendkit.Transferer: the release of lease and
// the acquisition for req under one acquisition of the lock.
func (m *Backend) Transfer(ctx context.Context, lease backendkit.Lease, req backendkit.AcquireRequest) (backendkit.Lease, error) {
	if err := ctx.Err(); err != nil {
		return backendkit.Lease{}, err
	}
	if err := req.Validate(); err != nil {
		return backendkit.Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ent, cur, held, err := m.current(lease.Election)
	switch {
	case err != nil:
		return backendkit.Lease{}, err
	case !held || cur.Holder != lease.Holder || cur.Term != lease.Term || req.Election != lease.Election:
		return backendkit.Lease{}, backendkit.ErrLeaseLost
	case ent.lastTerm >= backendkit.MaxTerm:
		return backendkit.Lease{}, backendkit.ErrTermExhausted
	}
	ent.lastTerm++
	l := backendkit.Lease{Election: req.Election, Holder: req.Identity, Metadata: req.Metadata, Duration: req.Duration,
		Incarnation: req.Incarnation, Term: ent.lastTerm, AcquiredAt: time.Now()}
	out, err := m.write(ent, l.Clone())
	m.hub.Wake(lease.Election)
	return out, err
}

// Get implements backendkit.Backend.
func (m *Backend) Get(ctx context.Context, election string) (backendkit.Lease, error) {
	if err := ctx.Err(); err != nil {
		return backendkit.Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, cur, held, err := m.current(election)
	switch {
	case err != nil:
		return backendkit.Lease{}, err
	case !held:
		return backendkit.Lease{}, backendkit.ErrNoLease
	}
	return cur.Clone(), nil
}

// Subscribe implements backendkit.Notifier: wake is called when election's lease is
// released.
func (m *Backend) Subscribe(election string, wake func()) (cancel func()) {
	return m.hub.Subscribe(election, wake)
}

// putGarbage makes election's record unreadable for ttl, as a foreign
// writer's value would be in a real store; for the conformance suite's
// hostile-record cases (see export_test.go).
func (m *Backend) putGarbage(election string, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ent := m.entries[election]
	if ent == nil {
		ent = &memEntry{}
		m.entries[election] = ent
	}
	m.version++
	ent.lease, ent.held, ent.garbage = backendkit.Lease{}, false, true
	ent.version, ent.expires = m.version, time.Now().Add(ttl)
}

// forget drops election's record but keeps its term counter, as close as an
// in-process store comes to a record deleted out of band.
func (m *Backend) forget(election string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ent := m.entries[election]; ent != nil {
		m.version++
		ent.lease, ent.held, ent.garbage, ent.version = backendkit.Lease{}, false, false, m.version
	}
}

// Module provides a *Backend as the graph's fxelection.Backend.
var Module = fx.Module("fxelection.memory",
	fx.Provide(fx.Annotate(New, fx.As(fx.Self()), fx.As(new(backendkit.Backend)))),
)
