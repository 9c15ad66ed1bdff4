// Package cachelease is fxelection's cache backend: leader election on a
// cache the application already runs, through a small cache contract
// (Store) that real caches implement with their atomic operations. Adapters
// live in sub-packages: memcachedlease (memcached, via gomemcache) and
// natslease (NATS JetStream key-value buckets).
//
// It is the counterpart of the C# LeaderElection library's DistributedCache
// and FusionCache backends, without their flaw.
//
// What each adapter guarantees — its expiry model, failover bound, push
// wake-up and what it cannot promise — is in its own package doc; what
// they share (the value format, terms, a lost value) is below. Another
// cache with add, get-with-version and compare-and-swap plugs in by
// implementing Store (and Watcher for push). The lease algorithm itself is
// package caslease's, which S3, DynamoDB and Kubernetes share: Store is
// its byte register and Backend its NotifyingBackend.
//
// # What a cache must offer
//
// A Store has three operations, each one atomic on the server:
//
//   - Get: the value and its version (memcached's CAS id, a KV revision).
//   - Add: store a value only if the key is absent (memcached add, KV Create).
//   - CompareAndSwap: replace the value only if its version is still the one
//     read (memcached cas, KV Update with the last revision).
//
// and optionally Watcher (change notifications) for push wake-up. Release
// is a compare-and-swap to a "released" marker, which is the conditional
// delete the election needs and also keeps the last term in the store.
// Transfer (Backend implements backendkit.Transferer, which
// Elector.ResignTo uses) is Release's check and Acquire's write for the
// successor in one compare-and-swap: the caller's lease is replaced by the
// successor's record with a new term, so the lease is never free in
// between and no other candidate can take it first.
//
// # Why a cache without compare-and-swap cannot host an election
//
// A plain get/set cache (IDistributedCache, the common multi-store cache
// wrappers, a bare Redis GET/SET) cannot be adapted, point by point:
//
//  1. Acquire becomes read-then-write. Two candidates that both read "free"
//     both write, the second write wins the store, and both believe they
//     lead: two leaders for a whole lease period, with nothing to detect it.
//     This is what the C# DistributedCache and FusionCache backends do
//     (GetAsync, then SetAsync), so under contention they elect two leaders.
//  2. Renew becomes read-then-write too. A leader that paused (GC, network)
//     past its lease reads its own stale record only if nobody else wrote in
//     between; otherwise its blind Set overwrites the new leader's lease and
//     resurrects its own. Nothing tells either of them.
//  3. Release becomes a blind delete, which removes whoever holds the lease
//     at that moment, possibly a successor.
//  4. A fencing term needs a read-modify-write of a counter; without an
//     atomic one, two acquirers can hand out the same term, and the term is
//     then useless to the fenced resource.
//  5. FusionCache adds a local memory layer in front of the distributed one
//     (and fail-safe stale values): a candidate may decide on its own stale
//     copy of the record, which makes points 1–3 likelier, not rarer.
//
// Compare-and-swap closes every one of these: a write succeeds only if
// nobody wrote since the caller's read, so exactly one of two racing
// candidates wins, a deposed leader's renewal fails, and a release never
// touches someone else's lease.
//
// # Values and keys
//
// The value under a key is the value shared with the S3 backend
// (backendkit.MarshalValue: a released flag and a per-write nonce around
// backendkit.MarshalRecord's record), so every write stores different
// bytes. Every value read is validated (backendkit.UnmarshalValue, which calls
// Lease.Validate) and must
// name the election it was read for; anything else is
// backendkit.ErrInvalidRecord and is never taken over before it expires.
// Keys are Options.KeyPrefix (default "fxelection.") plus the election name
// with every byte outside [A-Za-z0-9_-] escaped as =XX, so any election
// name gives a valid memcached key and a valid NATS KV key; a name whose
// escaped form exceeds the store's key limit (memcached: 250 bytes) is
// replaced by "=h" and its SHA-256.
//
// # Expiry: two models
//
//   - Server TTL (memcached): the store expires the lease by its own clock.
//     Acquire takes the lease only when the key is absent or released, so
//     no client clock is ever compared with another's.
//   - Observed time (NATS KV on servers without per-key TTL, such as
//     nats-server 2.9): a candidate may take over a record only after this
//     Backend has seen the same write — revision and the value's per-write
//     nonce: a bucket deleted and re-created numbers its revisions from 1
//     again — unchanged for the record's full duration on its own monotonic
//     clock (backendkit.ExpiryTracker, the rule client-go uses), and then
//     with a compare-and-swap on that revision. A missing key or a failed
//     read forgets what was seen. A candidate that starts while a dead
//     holder's record is in the store therefore waits a full lease
//     duration.
//
// # Fencing terms
//
// Acquire decides the term with backendkit.Claim: a retry by the holder's
// own incarnation (AcquireRequest.Incarnation, or a request naming none)
// keeps the live term; anything else that may take the lease — the key
// absent, a released value, another incarnation of the holder's identity
// (at once, without waiting for expiry), an expired record — writes a new
// term, strictly above the one in the store, with a compare-and-swap on
// the version read (or an add-if-absent). Renew, Release and Transfer act
// only on a record with the caller's holder, incarnation and term, not
// released (the version is not compared: only the holder writes its own
// term), and write with a compare-and-swap on the version they read; a
// Renew or Transfer that loses to another write changes nothing, a Release
// that loses (to a late renewal of the holder's) reads again. Transfer
// gives the
// successor the term Acquire would give it after a release: NextTerm of
// the transferred lease's term.
//
// A new holder's term is backendkit.NextTerm of the last term in the store:
// the larger of that term plus one and the clock in microseconds. A
// released lease keeps its term in the store. When the value is lost —
// expired, evicted under memory pressure, deleted by an operator, a
// flush_all or a bucket purge, a server restarted empty — the term still
// rises, because the next holder's clock is past the microsecond at which
// the lost term was handed out. It can repeat or go backwards only if the
// value was lost AND the next holder's clock reads earlier than the
// acquisition of the lost term (a clock stepped back, or clocks between
// hosts differing by more than the time between the two acquisitions), or,
// on a store without tombstones (memcached), a candidate's add of a missing
// key was in flight while another candidate created the key and it was lost
// again. A store that keeps tombstones (NATS KV) closes that window: the
// key is created again only over the tombstone the candidate read (see
// Store.Get). At
// backendkit.MaxTerm, Acquire fails with backendkit.ErrTermExhausted.
//
// A lost value also frees the election at once: the leader learns it at its
// next renewal (due RetryPeriod after the start of its last successful
// one) and steps down, or steps down at its RenewDeadline if the store
// cannot be reached; another candidate may lead in the meantime, with a
// higher term. Guard writes with the term.
//
// # Errors
//
// Every error a Backend returns passes through backendkit.RedactError with
// Options.Secrets, so URL credentials, tokens and passwords never reach
// logs, health endpoints or status output.
package cachelease
