package cachelease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Store is the cache contract: the small set of atomic operations a cache
// must offer to host an election. It is the Go counterpart of .NET's
// IDistributedCache with what an election needs added (add-if-absent and
// compare-and-swap on a version) and nothing it does not (no plain Set,
// which is exactly what makes the C# cache backends unsafe; see the package
// documentation).
//
// An implementation is a thin adapter over a client the application owns
// (sub-packages memcachedlease and natslease). It must be safe for
// concurrent use, honour ctx where its client allows, and wrap its client's
// errors with %w. Values are opaque bytes; keys are built by the Backend
// from [A-Za-z0-9._=-] only and are at most Capabilities.MaxKeyLen bytes.
type Store interface {
	// Get returns key's value and its current version, or an error matching
	// ErrNotFound if the key is absent (never written, deleted, expired or
	// evicted).
	//
	// A store that keeps a tombstone for a deleted key, and whose writes
	// can be conditioned on it (NATS KV's delete and purge markers), returns
	// with ErrNotFound an Entry whose Version names the tombstone (Value
	// nil). The Backend then creates the key with CompareAndSwap on that
	// version rather than with Add, and that store's Add must fail with
	// ErrExists while a tombstone is there. Why: the new holder's term is
	// decided from this read, so the write must land on exactly the state
	// read. An Add that also overwrote any tombstone would let a write
	// delayed in flight land after another candidate had created the key
	// with a higher term and an operator had deleted it again: the term
	// would go backwards.
	Get(ctx context.Context, key string) (Entry, error)

	// Add stores value under key only if key is absent, in one atomic
	// operation, and returns the new version. ttl > 0 asks the store to
	// expire the entry after ttl (rounded up, never down, to what the store
	// can express); ttl == 0 means no expiry. A key that exists gives an
	// error matching ErrExists and changes nothing. A write made whose
	// version cannot be returned gives an error matching ErrVersionUnknown;
	// the version returned on success is exactly the one this write
	// produced.
	Add(ctx context.Context, key string, value []byte, ttl time.Duration) (string, error)

	// CompareAndSwap replaces key's value only if its current version is
	// version, in one atomic operation, and returns the new version; ttl as
	// for Add. If the key changed or is gone, it returns an error matching
	// ErrConflict and changes nothing; ErrVersionUnknown and the returned
	// version as for Add.
	CompareAndSwap(ctx context.Context, key string, value []byte, version string, ttl time.Duration) (string, error)

	// Capabilities describes the store; it must not do I/O.
	Capabilities() Capabilities
}

// Entry is a value read from a Store with its version.
type Entry struct {
	// Value is the stored bytes.
	Value []byte
	// Version identifies this write of the key (memcached's CAS id, a NATS
	// KV revision); any later write of the key changes it. Never empty.
	Version string
}

// Watcher is the optional change-notification capability of a Store (NATS
// KV Watch). A Backend on a Store that implements it implements push
// wake-up; on any other Store, followers poll.
type Watcher interface {
	// Watch calls change for every later write or delete of a key that
	// starts with prefix (value is nil for a delete), until ctx is done or
	// the watch breaks. It calls ready once the watch is in place. It returns
	// nil when ctx is done and an error when the watch broke; the Backend
	// then watches again after a backoff. change and ready must not block
	// for long.
	Watch(ctx context.Context, prefix string, ready func(), change func(key string, value []byte)) error
}

// Capabilities says how a Store behaves; the Backend picks its expiry model
// from it.
type Capabilities struct {
	// ServerTTL is true when the store expires an entry by its own clock
	// after the ttl given to Add or CompareAndSwap (memcached). Expiry is
	// then server-authoritative. When false (NATS KV on servers without
	// per-key TTL), ttl is ignored and the Backend uses observed time
	// (backendkit.ExpiryTracker on the version and the value's write
	// nonce).
	ServerTTL bool
	// MaxTTL is the longest ttl the store can express; a longer lease
	// duration is refused by Acquire. 0 means no limit.
	MaxTTL time.Duration
	// MinTTL is the shortest ttl the store keeps as asked: a shorter one is
	// rounded up (memcached: whole seconds). The Backend reports it as its
	// backendkit.MinDurationer minimum when ServerTTL is set. 0 means none.
	MinTTL time.Duration
	// MaxKeyLen is the longest key the store accepts, in bytes; 0 means no
	// limit. Longer keys are replaced by a hash of the election name.
	MaxKeyLen int
}

var (
	// ErrNotFound is what a Store returns from Get when the key is absent.
	ErrNotFound = errors.New("cachelease: key not found")
	// ErrExists is what a Store returns from Add when the key exists.
	ErrExists = errors.New("cachelease: key exists")
	// ErrConflict is what a Store returns from CompareAndSwap when the key
	// changed since the given version, or is gone.
	ErrConflict = errors.New("cachelease: version conflict")
	// ErrVersionUnknown is what a Store returns from Add or CompareAndSwap
	// when the write was made but its new version could not be learnt: a
	// store whose writes do not return the version (memcached's add and
	// cas) reads it back, and the value read back was already another
	// write's, or gone, or the read failed. The write may have been seen by
	// others; the Backend then reports the call's outcome as unknown (a
	// store error, never ErrConflict's "nothing written" and never a second
	// write in the same call).
	ErrVersionUnknown = errors.New("cachelease: write stored, its version unknown")
	// ErrTTLRange is returned when a lease duration cannot be expressed as
	// the store's TTL (memcached: more than 30 days). Errors matching it
	// match backendkit.ErrDurationRange too.
	ErrTTLRange = fmt.Errorf("cachelease: lease duration out of the store's TTL range (%w)", backendkit.ErrDurationRange)
)
