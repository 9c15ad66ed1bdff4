// Package caslease is the lease algorithm for stores that have no lease of
// their own but a compare-and-swap register: one record per election,
// read with its version, created if absent, replaced only if unchanged.
// memcached, NATS KV, S3, DynamoDB and Kubernetes Leases host elections
// through it; each is an adapter of the Register contract, and the
// algorithm is written and tested once, here.
//
// # The contract
//
// A Register (Get with version and tombstone, Add = create-if-absent,
// CompareAndSwap on the entry read, Capabilities) holds Records
// (backendkit.Value: the lease, a released flag, a per-write nonce). Byte
// stores implement ByteStore and wrap it with Bytes, which encodes a
// Record with backendkit.MarshalValue; stores that map a record onto
// fields of their own implement Register directly. A Register that also
// implements Watcher gives push wake-up; a watch the store refuses
// (ErrWatchRefused) is reported once, by the Backend.
//
// # The algorithm
//
// New(register, Options{Name, Key, Prefix, ElectionOf, Secrets,
// DisablePush, WatchBackoff, MaxInFlight, Logger}) returns a Backend implementing
// fxelection.Backend, backendkit.Transferer and backendkit.MinDurationer;
// NewNotifying returns one that implements backendkit.Notifier too:
//
//   - Acquire reads the record and its version, decides with
//     backendkit.Claim (same holder and incarnation keep the term, anyone
//     else gets a strictly higher, clock-seeded one) and writes
//     conditioned on exactly the entry read (Add when absent, or
//     CompareAndSwap on it or on the tombstone read); a write that lost a
//     race reads and decides again, a few times.
//   - Expiry is the store's (Capabilities.ServerTTL: memcached) or
//     observed time (backendkit.ExpiryTracker keyed on the version and
//     the record's write nonce, so that a version repeated by a
//     re-created namespace is not taken for the one watched). On a store
//     that never drops a record itself (Capabilities.KeepsRecords), a
//     record read held and then missing was deleted from outside:
//     backendkit.HeldRecords decides on its absence.
//   - Renew, Release and Transfer match the leadership (holder,
//     incarnation, term, not released), not the last write: a renewal
//     the client gave up on but the store applied still belongs to its
//     holder. Their write is a compare-and-swap on the entry just read.
//   - A record that is not a valid record of the election (garbage,
//     another election's, a hostile field: backendkit.ErrInvalidRecord)
//     is never taken over or released: Acquire and Get fail with a store
//     error, Renew and Transfer with backendkit.ErrLeaseLost.
//   - A write whose version the store cannot return (ErrVersionUnknown)
//     ends the call with a store error: a call makes at most one write
//     that succeeds.
//   - Every error leaves through one path, the Backend's embedded
//     backendkit.Redacting: named by its operation and redacted once with
//     Options.Secrets (backendkit.RedactError), as in every backend that
//     embeds Redacting.
package caslease
