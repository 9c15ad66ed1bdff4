package cachelease

import "github.com/fxelection/fxelection/fxelection/backendkit/caslease"

// Store is the cache contract: the small set of atomic operations a cache
// must offer to host an election — get with version (and tombstone), add
// if absent, compare-and-swap on a version — which is caslease's byte
// register (caslease.ByteStore; see there for each method's contract).
// It is the Go counterpart of .NET's IDistributedCache with what an
// election needs added (add-if-absent and compare-and-swap on a version)
// and nothing it does not (no plain Set, which is exactly what makes the
// C# cache backends unsafe; see the package documentation).
//
// An implementation is a thin adapter over a client the application owns
// (sub-packages memcachedlease and natslease). Values are opaque bytes;
// keys are built by the Backend from [A-Za-z0-9._=-] only and are at most
// Capabilities.MaxKeyLen bytes.
type Store = caslease.ByteStore

// Entry is a value read from a Store with its version
// (caslease.ByteEntry).
type Entry = caslease.ByteEntry

// Watcher is the optional change-notification capability of a Store (NATS
// KV Watch; caslease.ByteWatcher). A Backend on a Store that implements it
// implements push wake-up; on any other Store, followers poll.
type Watcher = caslease.ByteWatcher

// Capabilities says how a Store behaves (caslease.Capabilities); the
// Backend picks its expiry model from it.
type Capabilities = caslease.Capabilities

// Backend is the lease algorithm on a Store, with push wake-up where the
// Store is a Watcher (caslease.NotifyingBackend).
type Backend = caslease.NotifyingBackend

// The errors a Store returns; see caslease.
var (
	// ErrNotFound is what a Store returns from Get when the key is absent.
	ErrNotFound = caslease.ErrNotFound
	// ErrExists is what a Store returns from Add when the key exists.
	ErrExists = caslease.ErrExists
	// ErrConflict is what a Store returns from CompareAndSwap when the key
	// changed since the given version, or is gone.
	ErrConflict = caslease.ErrConflict
	// ErrVersionUnknown is what a Store returns from Add or CompareAndSwap
	// when the write was made but its new version could not be learnt.
	ErrVersionUnknown = caslease.ErrVersionUnknown
	// ErrTTLRange is returned when a lease duration cannot be expressed as
	// the store's TTL (memcached: more than 30 days). Errors matching it
	// match backendkit.ErrDurationRange too.
	ErrTTLRange = caslease.ErrTTLRange
)
