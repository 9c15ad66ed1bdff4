package caslease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Record is what a Register holds for one election: the lease, whether it
// was released (a released record keeps its term in the store) and the
// per-write nonce that, with the store's version, names one write for
// observed time (backendkit.ExpiryTracker). It is backendkit.Value; its
// Lease.Version is not stored (the Backend sets it from Entry.Version).
type Record = backendkit.Value

// Entry is one read of a Register key.
type Entry struct {
	// Record is the record read.
	Record Record
	// Version identifies this write of the key (an S3 ETag, a DynamoDB
	// item version, a resourceVersion, a NATS revision); any later write
	// of the key changes it. Never empty for a record read. The Backend
	// returns it as Lease.Version and observes it, with Record.Write, for
	// observed time; it never parses it.
	Version string
	// State is the adapter's own state of this read (the object read, the
	// raw item), handed back unchanged to CompareAndSwap as prev. The
	// Backend never looks at it.
	State any
}

// Register is a compare-and-swap register of lease records, one key per
// election: the small set of atomic operations a store must offer to host
// the lease algorithm of Backend. An adapter maps it onto its store:
// byte stores (memcached, NATS KV, S3 objects) implement ByteStore and
// use Bytes; stores that map a record onto fields of their own
// (Kubernetes' Lease spec, DynamoDB attributes) implement Register
// directly.
//
// An implementation must be safe for concurrent use, honour ctx where its
// client allows, and wrap its client's errors with %w. Keys are what
// Options.Key returns.
type Register interface {
	// Get reads key, which holds election's record. It returns an error
	// matching ErrNotFound if the key is absent (never written, deleted,
	// expired or evicted). A record that is not a valid record of
	// election (garbage, another program's value, another election's
	// record, a hostile field) gives an error matching
	// backendkit.ErrInvalidRecord that quotes no stored bytes unescaped;
	// a record of a holder fxelection did not write (a client-go elector
	// on a Kubernetes Lease) may instead be returned as a live Record of
	// that holder, with a Write that changes with each of its writes.
	//
	// A store that keeps a tombstone for a deleted key, and whose writes
	// can be conditioned on it (NATS KV's delete and purge markers),
	// returns with ErrNotFound an Entry whose Version names the tombstone
	// (and its State, if the adapter needs one). The Backend then creates
	// the key with CompareAndSwap on that Entry rather than with Add, and
	// that store's Add must fail with ErrExists while a tombstone is
	// there: the new holder's term is decided from this read, so the
	// write must land on exactly the state read.
	Get(ctx context.Context, key, election string) (Entry, error)

	// Add stores rec under key only if key is absent, in one atomic
	// operation, and returns the new version. ttl > 0 asks the store to
	// expire the entry after ttl (rounded up, never down, to what the
	// store can express; only asked of stores whose Capabilities have
	// ServerTTL); ttl == 0 means no expiry. A key that exists gives an
	// error matching ErrExists and changes nothing. A write made whose
	// version cannot be returned gives an error matching
	// ErrVersionUnknown; the version returned on success is exactly the
	// one this write produced.
	Add(ctx context.Context, key string, rec Record, ttl time.Duration) (string, error)

	// CompareAndSwap replaces key's record with rec only if the key still
	// holds the write prev was read from (prev.Version, and whatever else
	// of prev.State the store conditions on), in one atomic operation,
	// and returns the new version; ttl as for Add. prev is an Entry Get
	// returned, a tombstone's included. If the key changed or is gone, it
	// returns an error matching ErrConflict and changes nothing;
	// ErrVersionUnknown and the returned version as for Add.
	CompareAndSwap(ctx context.Context, key string, prev Entry, rec Record, ttl time.Duration) (string, error)

	// Capabilities describes the store; it must not do I/O.
	Capabilities() Capabilities
}

// Watcher is the optional change-notification capability of a Register.
// A Backend on a Register that implements it implements push wake-up; on
// any other Register, followers poll (an adapter with a push mechanism of
// its own may wrap the Backend and override Subscribe).
type Watcher interface {
	// Watch calls change for every later write or delete of a key that
	// starts with prefix (Options.Prefix), until ctx is done or the watch
	// breaks. It calls ready once the watch is in place. It returns nil
	// when ctx is done and an error when the watch broke; the Backend
	// then watches again after a backoff. change and ready must not block
	// for long. An error matching ErrWatchRefused says the store refused
	// the watch (permissions): the Backend reports it once (see
	// ErrWatchRefused).
	Watch(ctx context.Context, prefix string, ready func(), change func(Change)) error
}

// Change is one write or delete a Watcher saw.
type Change struct {
	// Key is the key written or deleted.
	Key string
	// Deleted says the key was deleted (or purged, or expired).
	Deleted bool
	// Record is the record written, when Err is nil and Deleted is false.
	Record Record
	// Err is set when the value written is not a record (a foreign
	// value): it matches backendkit.ErrInvalidRecord.
	Err error
}

// Capabilities says how a store behaves; the Backend picks its expiry
// model from it.
type Capabilities struct {
	// ServerTTL is true when the store expires an entry by its own clock
	// after the ttl given to Add or CompareAndSwap (memcached). Expiry is
	// then server-authoritative. When false (S3, DynamoDB, Kubernetes,
	// NATS KV on servers without per-key TTL), ttl is always 0 and the
	// Backend uses observed time (backendkit.ExpiryTracker on the version
	// and the record's write nonce).
	ServerTTL bool
	// MaxTTL is the longest ttl the store can express; a longer lease
	// duration is refused by Acquire, Renew and Transfer with ErrTTLRange.
	// 0 means no limit. Only read with ServerTTL.
	MaxTTL time.Duration
	// MinTTL is the shortest ttl the store keeps as asked: a shorter one
	// is rounded up (memcached: whole seconds). The Backend reports it as
	// its backendkit.MinDurationer minimum when ServerTTL is set. 0 means
	// none.
	MinTTL time.Duration
	// MaxKeyLen is the longest key the store accepts, in bytes; 0 means
	// no limit. The Backend does not read it: Options.Key must respect it
	// (EscapedKey does).
	MaxKeyLen int
	// KeepsRecords is true when the store never drops a record by itself
	// (no TTL, no eviction, and the Backend never deletes one): a record
	// this Backend last read held and now finds missing was deleted from
	// outside, and backendkit.HeldRecords decides on its absence (the
	// holder's identity takes it back at once; anyone else only after
	// observing the absence for the record's duration). DynamoDB and
	// Kubernetes set it.
	KeepsRecords bool
}

var (
	// ErrNotFound is what a Register returns from Get when the key is
	// absent.
	ErrNotFound = errors.New("caslease: key not found")
	// ErrExists is what a Register returns from Add when the key exists.
	ErrExists = errors.New("caslease: key exists")
	// ErrConflict is what a Register returns from CompareAndSwap when the
	// key changed since prev was read, or is gone.
	ErrConflict = errors.New("caslease: version conflict")
	// ErrVersionUnknown is what a Register returns from Add or
	// CompareAndSwap when the write was made but its new version could
	// not be learnt: a store whose writes do not return the version
	// (memcached's add and cas) reads it back, and the value read back
	// was already another write's, or gone, or the read failed. The write
	// may have been seen by others; the Backend then reports the call's
	// outcome as unknown (a store error, never ErrConflict's "nothing
	// written" and never a second write in the same call). An error may
	// match both ErrVersionUnknown and ErrConflict; ErrVersionUnknown
	// wins.
	ErrVersionUnknown = errors.New("caslease: write stored, its version unknown")
	// ErrTTLRange is returned when a lease duration cannot be expressed
	// as the store's TTL (Capabilities.MaxTTL). Errors matching it match
	// backendkit.ErrDurationRange too.
	ErrTTLRange = fmt.Errorf("caslease: lease duration out of the store's TTL range (%w)", backendkit.ErrDurationRange)
)

// Options configures a Backend.
type Options struct {
	// Name is what BackendName returns (metrics, logs). Required.
	Name string
	// Key returns the store key of an election's record; it must be
	// one-to-one on election names (or collide only where a hash does)
	// and within Capabilities.MaxKeyLen. Required.
	Key func(election string) string
	// Prefix is what every key Key returns starts with: the prefix a
	// Watcher watches. Only read with a Watcher.
	Prefix string
	// ElectionOf, if set, returns the election whose key is key, or false
	// when the key does not say (a hashed key): a delete a Watcher sees
	// then wakes that election's subscribers, or all of them. Default:
	// every delete wakes all subscribers.
	ElectionOf func(key string) (election string, ok bool)
	// Secrets are values removed from every error the Backend returns
	// (passwords, tokens the adapter's client was configured with). URL
	// userinfo and query strings and key=value secrets are removed anyway
	// (backendkit.RedactError).
	Secrets []string
	// DisablePush turns push wake-up off even when the Register can
	// watch: followers then only poll.
	DisablePush bool
	// WatchBackoff bounds the wait before re-establishing a Watcher's
	// watch that broke or was refused. Zero: 50 ms to 2 s.
	WatchBackoff Backoff
	// MaxInFlight, if positive, bounds the Register calls in flight
	// (Get, Add, CompareAndSwap, and a Watcher's Watch until it is in
	// place); a call waits for a slot within its context. Zero: no bound.
	MaxInFlight int
	// Logger receives the warning when a Watcher's watch starts being
	// refused (ErrWatchRefused) and the notice when it is allowed again.
	// Nil: none.
	Logger *slog.Logger
}

// Backoff bounds a retry's wait: Min after the first failure, doubling
// per consecutive failure up to Max, plus up to 20% jitter
// (backendkit.Backoff). A zero Min is 50 ms; a zero Max is 2 s, or Min if
// that is longer.
type Backoff struct {
	// Min is the wait after one failure.
	Min time.Duration
	// Max caps the wait; it must not be below Min.
	Max time.Duration
}

const (
	// defaultWatchMin and defaultWatchMax are a zero Backoff's bounds.
	defaultWatchMin = 50 * time.Millisecond
	defaultWatchMax = 2 * time.Second
)

// bounds returns b's bounds with the defaults applied, or an error naming
// the bad field.
func (b Backoff) bounds() (lo, hi time.Duration, err error) {
	lo, hi = b.Min, b.Max
	switch {
	case lo < 0:
		return 0, 0, fmt.Errorf("%w: WatchBackoff.Min is negative", ErrOptions)
	case hi < 0:
		return 0, 0, fmt.Errorf("%w: WatchBackoff.Max is negative", ErrOptions)
	case hi > 0 && hi < lo:
		return 0, 0, fmt.Errorf("%w: WatchBackoff.Max is below WatchBackoff.Min", ErrOptions)
	}
	if lo == 0 {
		lo = defaultWatchMin
	}
	if hi == 0 {
		hi = max(defaultWatchMax, lo)
	}
	return lo, hi, nil
}

// ErrOptions is matched by New's error for invalid Options: no Name or
// Key, or a WatchBackoff with a negative bound or Max below Min. The
// error names the field.
var ErrOptions = errors.New("caslease: invalid options")

// ErrWatchRefused is matched by the error a Watcher's Watch returns when
// the store refused the watch (a missing permission), as opposed to a
// watch that broke. Push wake-up is off until a watch is allowed:
// followers poll. The Backend watches again with backoff and reports a
// refusal once: it logs it (Options.Logger) when it starts, and the first
// Acquire that would have returned a *backendkit.HeldError (a follower's,
// which is what push wake-up is for) returns the Watcher's error instead,
// so that it reaches the elector without costing anyone a leadership.
// The next refusal after a watch that worked is reported again. An
// adapter's own sentinel wraps this one.
var ErrWatchRefused = errors.New("caslease: watch refused")
