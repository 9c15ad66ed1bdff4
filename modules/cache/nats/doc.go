// Package natslease is the NATS JetStream key-value adapter of fxelection's
// cache backend (package cachelease), on github.com/nats-io/nats.go's
// jetstream package: Create for add-if-absent, Update with the last
// revision for compare-and-swap, and a KV Watch for push wake-up.
//
//	b, err := natslease.New(kv, nc, cachelease.Options{}) // or natslease.Module in fx
//
// # Summary
//
//   - Expiry: observed time (see below): a candidate takes over another
//     identity's record only after it has seen the same write unchanged for
//     the record's full duration on its own monotonic clock. No clock is
//     compared with another node's.
//   - Fencing term: clock-seeded, the larger of the last term in the store
//     plus one and the acquiring candidate's clock in microseconds; a
//     released lease keeps its term (see package cachelease).
//   - Push wake-up: one KV watch per Backend wakes followers when a lease
//     is released, handed over (Transfer) or its key deleted, not when it
//     is renewed (see Push wake-up).
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): the caller's lease ended and the successor's
//     record written in one Update on the revision read, with a new term
//     above the ended one, so no other candidate can take the lease in
//     between; the watch wakes the successor.
//   - Failover: a follower first sees a crashed leader's last write at its
//     next poll (up to 1.2 × RetryPeriod after the write), then needs
//     LeaseDuration more on its own clock and takes over at the retry after
//     that: within LeaseDuration + 1.2 × RetryPeriod of first seeing the
//     write, so up to LeaseDuration + 2.4 × RetryPeriod after the leader's
//     last renewal, plus round trips. A candidate that starts later waits a
//     full LeaseDuration from its first read. Expiry is not pushed; a
//     release is, and is taken within milliseconds.
//   - What it cannot promise: a foreign value blocks the election until an
//     operator deletes it; a bucket with Replicas: 1 is lost with its
//     server's disk (terms stay clock-seeded); a bucket MaxAge shorter than
//     the lease duration deletes live leases; a candidate clock running
//     faster than the leader's by more than LeaseDuration−RenewDeadline over
//     one lease could take over early; with JetStream's default sync
//     interval a host crash (not a process kill) can lose the last
//     acknowledged lease writes of a single-replica bucket: run
//     sync_interval: always (see Durability).
//
// # Expiry: observed time
//
// nats-server before 2.11 has no per-key TTL (only a bucket-wide MaxAge,
// which cannot follow each lease's duration), so this adapter uses observed
// time: a candidate takes over a record only after it has seen the same
// write (revision and the value's per-write nonce) unchanged for the
// record's full duration on its own monotonic clock, and then with Update
// on that revision (backendkit.ExpiryTracker). The nonce matters when the
// bucket is deleted and re-created: its revisions start again at 1, and a
// follower that had watched the old revision 1 for a lease must not take
// the new leader's revision 1 for it.
// No clock is compared with another node's. A candidate that starts while a
// dead holder's record is in the bucket waits a full lease duration. Do not
// give the bucket a MaxAge shorter than the lease duration: the server
// would delete live leases.
//
// A foreign value under a lease key never expires (there is no TTL): it
// blocks the election with backendkit.ErrInvalidRecord errors until an
// operator deletes it.
//
// # Replicas
//
// A bucket with Replicas: 3 (or 5) is a Raft-replicated JetStream stream:
// every Create and Update is acknowledged only once a majority of the
// servers stored it, and compare-and-swap is checked by the stream's
// leader, so the store is linearizable and survives the loss of a minority
// of servers without losing a lease or a term, and without two candidates
// both winning. Replicas: 1 loses the bucket with its server's disk; terms
// stay clock-seeded (see cachelease).
//
// # Durability
//
// JetStream acknowledges a write once the server has written it to its
// store files, and makes them durable (fsync) only every sync interval:
// two minutes by default. nats-server 2.9, which this package is tested
// with, has no setting for it; 2.10 and later take
// jetstream { sync_interval: always }, which syncs every write before
// acknowledging it. A killed server process loses nothing, since what it
// wrote is in the operating system's page cache: 1,000 SIGKILLs of a
// nats-server 2.9 under running elections (RELIABILITY.md, "Store
// fail-over and durability") lost none of 56,914 acknowledged writes, left
// no two electors believing they led and repeated no term. A host
// crash or power loss is another matter: the writes of the last interval
// can be lost although they were acknowledged (Jepsen found such losses,
// with split brain, in JetStream 2.12.1, 2025). For an election on a bucket
// with Replicas: 1 a lost write means the store holds an older record, or
// none: the holder's next renewal fails (its compare-and-swap names a
// revision the store lost) and it steps down, and where the lease key
// itself was lost another candidate takes the lease at once, so two may
// believe they lead until then (at most RenewDeadline). Terms stay
// clock-seeded and keep rising. So: run a single-replica bucket on a
// server with sync_interval: always (one fsync per write, one write per
// renewal), or use Replicas: 3 on servers on separate hosts, where a
// write is acknowledged only once a majority has it and one host's crash
// cannot lose it (a power loss of all of them at once still can, within
// the interval).
//
// # Deleted keys
//
// A deleted or purged key leaves a marker in the bucket. Acquire creates
// the key again with a compare-and-swap on the marker it read (Get reads
// the key's history for it: a second round trip, made only when the key is
// missing), never with kv.Create, which overwrites whatever marker is
// there when the write arrives: a write delayed in flight would then land
// after another candidate had created the key with a higher term and an
// operator had deleted it again, and the term would go backwards.
//
// # Push wake-up
//
// A Backend watches the bucket's keys under its prefix (one watch shared by
// all its elections, started by the first subscription); a release or a
// deleted key wakes the waiting candidates at once, and so does a value
// that hands the lease to another leadership than the live value before
// it (another holder, incarnation or term: a Transfer, a takeover), or the
// first value of a key the watch sees, which may have been one. A renewal
// wakes nobody. The watch is re-established with backoff when it breaks,
// and every subscriber is woken then, since a release may have been
// missed. A KV watch does not survive
// a server restart by itself: a Store that knows its connection (New or
// NewStore given the *nats.Conn, NewBucketStore, ConfigModule, Module when
// the graph has a *nats.Conn) re-establishes it as soon as the connection
// is back; without the connection push stays off after a restart and
// followers poll every RetryPeriod.
//
// # Bucket lifecycle
//
// New and Module use a bucket the application created (jetstream.KeyValue);
// if it disappears (deleted, or a server restarted without its store), the
// Backend's operations fail until the application re-creates it.
// NewBucketStore (and ConfigModule, fxelection.backends.nats) binds the bucket by name,
// creates it if missing, and re-creates it when it disappears.
//
// # Configuration
//
// The module fxelection.backends.nats (ConfigModule) connects with a
// connection of its own, which retries in the background (a server that is
// down at start shows as election errors until it is up), from these
// settings:
//
//   - url (required, a secret): the servers' URLs, comma-separated; they
//     may carry user:pass@, which is never put in errors.
//   - username, password (a secret), token (a secret): credentials.
//   - bucket: the KV bucket (A-Z a-z 0-9 _ -; default "fxelection"),
//     created on first use if missing and again if it vanishes.
//   - replicas: the replica count of a bucket it creates, 1 to 5 (default
//     1).
//   - prefix: cachelease.Options.KeyPrefix (default "fxelection.").
//   - push: KV watch wake-up (default true).
package natslease
