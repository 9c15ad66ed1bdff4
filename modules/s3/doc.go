// Package s3lease is the S3 backend for fxelection: one object per election
// in a bucket of an S3-compatible store (AWS S3, MinIO), changed only with
// conditional writes. S3 has no TTL, so this is an observed-time backend:
// no node ever compares its clock with another's.
//
//	b, err := s3lease.New(client, s3lease.Options{Bucket: "leases"}) // or s3lease.Module in fx
//
// # Summary
//
//   - Expiry: observed time. A candidate takes over another identity's
//     lease only after it has seen the same write unchanged for the
//     record's full duration on its own monotonic clock
//     (backendkit.ExpiryTracker), then writes with If-Match on that ETag.
//     No clock is compared with another node's.
//   - Fencing term: the larger of the stored term plus one and the
//     acquiring candidate's clock in microseconds, kept in the object
//     across renewals and release (see Guarantees and requirements).
//   - Push wake-up: none; followers learn of a release at their next retry,
//     within 1.2 × RetryPeriod.
//   - Failover: a follower first sees a crashed leader's last write at its
//     next poll (up to 1.2 × RetryPeriod after the write), then needs
//     LeaseDuration more on its own clock and takes over at the retry after
//     that: within LeaseDuration + 1.2 × RetryPeriod of first seeing the
//     write, so up to LeaseDuration + 2.4 × RetryPeriod after the leader's
//     last renewal, plus round trips. A candidate that starts later waits a
//     full LeaseDuration from its first read, however long ago the holder
//     died. Until then Get still names the old holder.
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): the caller's lease replaced by the
//     successor's record in one PUT conditional on the ETag read, with a
//     new term above the old one, so no other candidate can take the
//     lease in between.
//   - What it cannot promise: the store must be strongly consistent and
//     honour conditional writes; a foreign object blocks the election until
//     an operator deletes it; a term can repeat only after the object is
//     lost and the next candidate's clock lags (see below); a candidate
//     clock running faster than the leader's by more than
//     LeaseDuration−RenewDeadline over one lease could take over early.
//
// # Layout
//
// Each election is one object, <prefix><escaped election>.json (the prefix
// defaults to "fxelection/", the name is escaped with url.PathEscape). Its
// body is the value shared with the cache backends (backendkit.MarshalValue:
// a small JSON envelope around backendkit.MarshalRecord's record):
//
//	{"fxelection_value":1,"released":false,"write":"9f2c…","record":{…}}
//
// "released" marks a lease its holder gave up: the object is never deleted,
// so the term survives a release and the next holder's term is higher.
// "write" is a random nonce that makes every write's body, and so its ETag,
// unique: S3 and MinIO ETags are content hashes, and without the nonce a
// renewal writing the same record would keep the same ETag, which followers
// would read as "unchanged" and take over. Lease.Version is the ETag.
//
// # Operations
//
//   - Acquire reads the object. Absent: create it with If-None-Match: *.
//     Released: replace it with If-Match: <etag>. Held by the caller's
//     identity and incarnation (AcquireRequest.Continues; a request with no
//     incarnation matches any): replace it with If-Match at the same term (a
//     retry after a lost response keeps its leadership). Held by the
//     caller's identity with another incarnation (a process restarted with
//     a fixed identity, or the same elector after a step-down): take it at
//     once, with no wait for expiry, replacing it with If-Match at a new
//     term strictly above the stored one, so the paused predecessor and its
//     successor never write with one term. Held by someone else: the
//     candidate's backendkit.ExpiryTracker decides; once it has seen the
//     same write unchanged for the record's full Duration on its own
//     monotonic clock, it replaces the object with If-Match, otherwise it
//     returns a *backendkit.HeldError. backendkit.Claim makes this decision
//     (one rule for every compare-and-swap store: the caslease algorithm,
//     which this backend is an adapter of). Every new term is
//     backendkit.NextTerm(stored term, or 0 when there is no object): the
//     larger of the stored term + 1 and the candidate's clock in
//     microseconds since the Unix epoch. The record keeps the incarnation
//     that acquired the term ("incarnation", Lease.Incarnation) unchanged
//     across renewals. A write that fails its precondition (412) lost a
//     race: Acquire reads again and decides again (a few times at most), so
//     a loser reports the winner.
//   - Renew, Release and Transfer read the object, check that it still
//     holds the caller's leadership (holder, incarnation and term, not
//     released; not the ETag, so that a renewal whose reply was lost but
//     which the store applied is still the holder's) and replace it with
//     If-Match on the ETag read: two requests each. Renew and Transfer fail
//     with backendkit.ErrLeaseLost otherwise, or when the If-Match loses;
//     Release returns nil when the leadership is no longer there, and a
//     lost If-Match reads again.
//   - Get reads the object: absent or released gives backendkit.ErrNoLease.
//     Lease.ExpiresAt is always zero (the store has no expiry time to
//     report); AcquiredAt is the acquiring node's clock, for display only.
//
// # Guarantees and requirements
//
//   - A candidate takes over another identity's lease only after it has
//     seen the same write unchanged for a full lease duration on its own
//     monotonic clock, then writes with a compare-and-swap on that ETag. A
//     write is named by the ETag and the body's per-write nonce together
//     (backendkit.ExpiryTracker keys on both), and the watch restarts
//     whenever the candidate finds the object missing or a read fails (a
//     store error, a deleted bucket): no watch spans a gap in what the
//     candidate saw, so a bucket deleted and re-created, or an object
//     restored from a backup, is watched for a full lease from its
//     reappearance. So a candidate that starts while a dead holder's object
//     sits in the bucket waits a full LeaseDuration from its first read,
//     however long ago the holder died. Only a candidate clock running
//     faster than the leader's by more than LeaseDuration−RenewDeadline
//     over one lease period could take over early. What the rule cannot
//     see: an object removed and put back byte for byte between two of a
//     candidate's reads looks to it like one unchanged write.
//   - A new incarnation of the holder's identity takes the lease at once
//     with a higher term, and the object then names the new incarnation:
//     the predecessor's next Renew finds another incarnation and fails
//     with backendkit.ErrLeaseLost. Without a fixed identity (the default
//     identity is unique per process) this never happens.
//   - The store must give strong read-after-write consistency (AWS S3 has
//     since December 2020, MinIO always has) and honour conditional writes:
//     If-None-Match: * on PUT (AWS since August 2024) and If-Match on PUT
//     (AWS since November 2024; MinIO supports both). A store that ignores
//     these headers silently breaks mutual exclusion; do not use one.
//   - Terms strictly increase on every change of holder or incarnation and
//     after every release, and never wrap: at backendkit.MaxTerm Acquire fails with an
//     error matching backendkit.ErrTermExhausted and writes nothing.
//   - Terms also rise across a deleted object (an operator cleaning the
//     bucket, or recovering from a foreign object): with no object to read,
//     the next term is the candidate's clock in microseconds, above every
//     term handed out earlier (each was at most the microsecond it was
//     issued at, unless many holder changes came within microseconds).
//     What can still make a term repeat or go back: only a deleted (or
//     destroyed) object, and then only a candidate whose wall clock lags by
//     more than the time since the lost term was handed out, or whose
//     create of the missing object (decided before) was still in flight
//     while another candidate created the object and it was deleted again
//     (S3 keeps no tombstone to condition the create on). Keep clocks
//     synchronised (NTP) and the gap is the clock error, usually
//     milliseconds; an object that survives keeps terms rising whatever the
//     clocks say.
//   - There is no push wake-up: followers learn of a release at their next
//     retry (the Backend does not implement backendkit.Notifier).
//
// # Foreign objects and hostile records
//
// Everything read from the bucket is validated before the elector sees it.
// An object larger than 64 KiB (backendkit.MaxValueBytes), not valid UTF-8,
// not this envelope, or
// holding a record that backendkit.UnmarshalRecord rejects (holder,
// election or metadata not printable UTF-8, term outside [1, MaxTerm],
// duration not in (0, backendkit.MaxRecordDuration], so no duration can
// overflow into a negative one), that names another election, or whose
// acquired_at cannot be written back, gives an error matching
// backendkit.ErrInvalidRecord from Acquire and Get, quoting no stored value
// unescaped. Such an object is never taken over (S3 cannot expire it, and
// its duration cannot be trusted). An operator recovers by deleting the
// object; the election then goes on at a clock-seeded term (see above).
//
// # Errors
//
// Every error that leaves the Backend, and the config module's,
// passes through backendkit.RedactError: URL userinfo and query strings
// and key=value secrets are removed, and for the config module's backends the
// configured secret key too (a Backend from New does not know the client's
// secret key; SigV4 never sends it, so no S3 error carries it). Errors still
// match the contract's sentinels with errors.Is.
//
// # Clients
//
// New uses the application's *minio.Client and does no I/O; the bucket
// must exist. Give the client a Region to spare it a bucket-location
// lookup.
//
// # Configuration
//
// The configuration-document module fxelection.backends.s3 (ConfigModule)
// builds a client of its own from these settings:
//
//   - endpoint (required): the service's host[:port], not a URL.
//   - bucket (required): Options.Bucket, an existing bucket.
//   - access_key, secret_key (a secret): credentials, set together
//     (default: anonymous); the secret key is never put in errors.
//   - region: the bucket's region (default: looked up by the client).
//   - prefix: Options.Prefix (default "fxelection/").
//   - secure: HTTPS (default true).
package s3lease
