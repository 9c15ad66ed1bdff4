package fxelection

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// MemoryBackend is an in-process Backend: leases live in a map guarded by a
// mutex and expire by this process's monotonic clock. Terms are monotonic
// for the life of the value. It supports push wake-up (Notifier).
//
// It serves single-process applications (several goroutines or components
// electing one of themselves), demos and users' unit tests. It cannot
// coordinate separate processes. Records are stored encoded, as a real store
// would hold them, so PutRaw can plant a foreign value.
type MemoryBackend struct {
	mu      sync.Mutex
	entries map[string]*memEntry
	version uint64
	hub     *WakeHub
}

type memEntry struct {
	raw []byte // nil when nobody holds the lease
	// holder, term and dur are raw's, when cached is set (raw written by
	// write, not PutRaw), so that a renewal need not decode the record.
	holder   string
	term     uint64
	dur      time.Duration
	cached   bool
	version  uint64    // changes on every write
	expires  time.Time // local monotonic clock
	lastTerm uint64    // survives release
}

var (
	_ Backend      = (*MemoryBackend)(nil)
	_ Notifier     = (*MemoryBackend)(nil)
	_ NamedBackend = (*MemoryBackend)(nil)
	_ BatchRenewer = (*MemoryBackend)(nil)
)

// NewMemoryBackend returns an empty in-memory backend.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{entries: map[string]*memEntry{}, hub: NewWakeHub(nil)}
}

// BackendName returns "memory".
func (m *MemoryBackend) BackendName() string { return "memory" }

// current returns the live record of election, if any; the caller holds m.mu.
func (m *MemoryBackend) current(election string) (*memEntry, Lease, bool, error) {
	ent := m.entries[election]
	if ent == nil {
		ent = &memEntry{}
		m.entries[election] = ent
	}
	if ent.raw == nil || !time.Now().Before(ent.expires) {
		return ent, Lease{}, false, nil
	}
	l, err := UnmarshalRecord(ent.raw)
	if err != nil {
		return ent, Lease{}, false, err
	}
	l.Version = strconv.FormatUint(ent.version, 10)
	l.ExpiresAt = ent.expires
	return ent, l, true, nil
}

func (m *MemoryBackend) write(ent *memEntry, l Lease) (Lease, error) {
	raw, err := MarshalRecord(l)
	if err != nil {
		return Lease{}, err
	}
	m.version++
	ent.raw, ent.version, ent.expires = raw, m.version, time.Now().Add(l.Duration)
	ent.holder, ent.term, ent.dur, ent.cached = l.Holder, l.Term, l.Duration, true
	l.Version = strconv.FormatUint(ent.version, 10)
	l.ExpiresAt = ent.expires
	return l, nil
}

// Acquire implements Backend.
func (m *MemoryBackend) Acquire(ctx context.Context, req AcquireRequest) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acquire(req)
}

// acquire is Acquire with m.mu held. It is a function of its own so that
// the frame of a caller waiting for the lock stays small: at start-up many
// campaign goroutines wait there at once, and their stacks are what they
// cost.
func (m *MemoryBackend) acquire(req AcquireRequest) (Lease, error) {
	ent, cur, held, err := m.current(req.Election)
	if err != nil {
		return Lease{}, err
	}
	l := Lease{Election: req.Election, Holder: req.Identity, Metadata: req.Metadata, Duration: req.Duration}
	switch {
	case held && cur.Holder != req.Identity:
		return Lease{}, &HeldError{Holder: cur.Clone()}
	case held:
		l.Term, l.AcquiredAt = cur.Term, cur.AcquiredAt
	case ent.lastTerm >= MaxTerm:
		return Lease{}, ErrTermExhausted
	default:
		ent.lastTerm++
		l.Term, l.AcquiredAt = ent.lastTerm, time.Now()
	}
	return m.write(ent, l.Clone())
}

// Renew implements Backend.
func (m *MemoryBackend) Renew(ctx context.Context, lease Lease) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renew(lease)
}

// RenewBatch implements BatchRenewer: every lease renewed as Renew would,
// under one acquisition of the lock.
func (m *MemoryBackend) RenewBatch(ctx context.Context, leases []Lease) []RenewResult {
	out := make([]RenewResult, len(leases))
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
func (m *MemoryBackend) renew(lease Lease) (Lease, error) {
	if ent := m.entries[lease.Election]; ent != nil && ent.cached && ent.raw != nil &&
		time.Now().Before(ent.expires) && ent.holder == lease.Holder && ent.term == lease.Term && ent.dur == lease.Duration {
		// Ours, and the record does not change: extend it without decoding
		// or encoding it. The caller's lease is the record's content.
		m.version++
		ent.version, ent.expires = m.version, time.Now().Add(ent.dur)
		lease.Version, lease.ExpiresAt = strconv.FormatUint(ent.version, 10), ent.expires
		return lease, nil
	}
	ent, cur, held, err := m.current(lease.Election)
	if err != nil {
		return Lease{}, err
	}
	if !held || cur.Holder != lease.Holder || cur.Term != lease.Term {
		return Lease{}, ErrLeaseLost
	}
	cur.Duration = lease.Duration
	return m.write(ent, cur)
}

// Release implements Backend.
func (m *MemoryBackend) Release(ctx context.Context, lease Lease) error {
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
	ent.raw, ent.version, ent.holder, ent.cached = nil, m.version, "", false
	m.hub.Wake(lease.Election)
	return nil
}

// Get implements Backend.
func (m *MemoryBackend) Get(ctx context.Context, election string) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, cur, held, err := m.current(election)
	switch {
	case err != nil:
		return Lease{}, err
	case !held:
		return Lease{}, ErrNoLease
	}
	return cur.Clone(), nil
}

// Subscribe implements Notifier: wake is called when election's lease is
// released.
func (m *MemoryBackend) Subscribe(election string, wake func()) (cancel func()) {
	return m.hub.Subscribe(election, wake)
}

// PutRaw stores raw as election's record for ttl, as a foreign writer
// might; for tests of how electors treat records they cannot read.
func (m *MemoryBackend) PutRaw(election string, raw []byte, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ent := m.entries[election]
	if ent == nil {
		ent = &memEntry{}
		m.entries[election] = ent
	}
	m.version++
	ent.raw, ent.version, ent.expires = raw, m.version, time.Now().Add(ttl)
	ent.holder, ent.cached = "", false
}
