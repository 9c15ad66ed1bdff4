// Package ddblease is the DynamoDB backend for fxelection: one item per
// election in a DynamoDB table, changed only with conditional writes
// (PutItem with a condition expression): an adapter of the one
// compare-and-swap lease algorithm (backendkit/caslease). DynamoDB's TTL deletes expired
// items lazily (AWS promises only "within a few days"), so it cannot decide
// when a lease has expired: this is an observed-time backend, like the S3
// one, and no node ever compares its clock with another's.
//
//	b, err := ddblease.New(client, ddblease.Options{Table: "leases"}) // or ddblease.Module in fx
//
// The package is a Go module of its own
// (github.com/fxelection/fxelection/modules/dynamodb), so that the AWS
// SDK (aws-sdk-go-v2) weighs only on applications that use DynamoDB: the
// root module's users do not download or build it.
//
// # Summary
//
//   - Expiry: observed time. A candidate takes over another identity's
//     lease only after it has seen the same write unchanged for the
//     record's full duration on its own monotonic clock
//     (backendkit.ExpiryTracker), then writes with a PutItem conditional
//     on that write. No clock is compared with another node's.
//   - Fencing term: the larger of the stored term plus one and the
//     acquiring candidate's clock in microseconds (backendkit.NextTerm),
//     kept in the item across renewals and release, so it rises even after
//     the item is deleted (see Guarantees and requirements).
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
//   - Deletes from outside: the package never deletes an item, so an item
//     a candidate read held and then finds missing was deleted behind the
//     holder's back (an operator, a re-created table, DynamoDB TTL), and
//     the holder believes it leads until its next renewal. The candidate
//     creates the item again only after it has seen it missing for the
//     vanished record's duration; until then Acquire reports that record
//     as the holder (its own identity takes it at once, always with a new
//     term). So the old holder has stopped believing first.
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): the caller's lease replaced by the
//     successor's record in one PutItem conditional on the item read, with
//     a new term above the old one, so no other candidate can take the
//     lease in between.
//   - What it cannot promise: a foreign item blocks the election until an
//     operator deletes it; a term can repeat only after the item is lost
//     and the next candidate's clock lags (see below); a candidate clock
//     running faster than the leader's by more than
//     LeaseDuration−RenewDeadline over one lease could take over early;
//     DynamoDB global tables (multi-region, last writer wins) break mutual
//     exclusion between regions: use a single-region table; a candidate
//     that never read a deleted item held (one started after the delete)
//     creates it at once, and leads while the old holder believes it does,
//     until the old holder's next renewal (its RenewDeadline if cut off).
//
// # Layout
//
// Each election is one item of the table, whose partition key is the
// string attribute "election" (KeyAttribute), holding the election's
// name; the table has no sort key. The item has two more attributes:
//
//   - "lease" (ValueAttribute), a string: the value shared with the S3 and
//     cache backends (backendkit.MarshalValue: a small JSON envelope around
//     backendkit.MarshalRecord's record, with a released flag and a
//     per-write random nonce):
//     {"fxelection_value":1,"released":false,"write":"9f2c…","record":{…}}
//   - "version" (VersionAttribute), a number: every write sets it to the
//     larger of the previous version plus one and the writer's clock in
//     microseconds, so that an item deleted and written again does not
//     repeat its versions. Lease.Version is it, in decimal.
//
// "released" marks a lease its holder gave up: the item is never deleted,
// so the term survives a release and the next holder's term is higher.
// The nonce names each write uniquely even if a version repeated, and
// every conditional write compares both the version and the whole "lease"
// text it read, so it replaces exactly the write it decided on. Other
// attributes (a TTL attribute an operator added, say) are ignored and
// dropped by the next write; do not enable DynamoDB TTL on the table: an
// item it deletes takes the term with it (the clock-seeded term still
// rises, see below).
//
// # Operations
//
// Every read is a strongly consistent GetItem; every write one PutItem.
//
//   - Acquire reads the item. Absent: create it, conditional on
//     attribute_not_exists(election); but if this Backend's last read of
//     it found it held (not released), decide as if that record were still
//     there (released, for its holder's identity), its absence watched
//     instead of a write (below), and create the item only when that
//     allows. Released: replace it, conditional on
//     the version and value read. Held by the caller's identity and
//     incarnation (AcquireRequest.Continues; a request with no incarnation
//     matches any): replace it at the same term (a retry after a lost
//     response keeps its leadership). Held by the caller's identity with
//     another incarnation: take it at once at a new term strictly above
//     the stored one. Held by someone else: the candidate's
//     backendkit.ExpiryTracker decides; once it has seen the same write
//     (version and nonce) unchanged for the record's full Duration on its
//     own monotonic clock, it replaces the item conditionally, otherwise it
//     returns a *backendkit.HeldError. backendkit.Claim makes this decision
//     (one rule for S3, the cache backends and this one). A conditional
//     write that fails (ConditionalCheckFailedException) lost a race:
//     Acquire reads again and decides again (a few times at most), so a
//     loser reports the winner.
//   - Renew, Release and Transfer read the item, check that it still
//     holds the caller's leadership (holder, incarnation and term, not
//     released; whichever write of it, so that a renewal the client gave
//     up on but the store applied is still its holder's) and replace it
//     conditionally on what they read: two requests each. Renew and
//     Transfer fail with backendkit.ErrLeaseLost when the leadership is
//     gone or the condition fails; Release reads again after a lost
//     condition and returns nil when the leadership is no longer there.
//   - Get reads the item: absent or released gives backendkit.ErrNoLease.
//     Lease.ExpiresAt is always zero (the store has no expiry time to
//     report); AcquiredAt is the acquiring node's clock, for display only.
//
// # Guarantees and requirements
//
//   - A candidate takes over another identity's lease only after it has
//     seen the same write unchanged for a full lease duration on its own
//     monotonic clock, then writes conditionally on that write. The watch
//     restarts whenever the candidate finds the item missing or a read
//     fails (a store error, a deleted table): no watch spans a gap in what
//     the candidate saw, so an item deleted and restored from a backup is
//     watched for a full lease from its reappearance. An item the
//     candidate last read held and now finds missing is, in the same way,
//     created again only after the candidate has seen it missing for the
//     vanished record's full duration (backendkit.ExpiryTracker watches the
//     absence as it would a write, from the first read that found it
//     missing; a failed read starts it again): the holder's last renewal
//     came before the delete, so it has stopped believing by then, even if
//     it was cut off from DynamoDB at the delete. Only a candidate
//     clock running faster than the leader's by more than
//     LeaseDuration−RenewDeadline over one lease period could take over
//     early.
//   - A new incarnation of the holder's identity takes the lease at once
//     with a higher term; the predecessor's next Renew finds another
//     incarnation and fails with backendkit.ErrLeaseLost.
//   - DynamoDB's strongly consistent reads and condition expressions give
//     the atomicity this needs within one region. A global table
//     replicates between regions with "last writer wins" and no
//     cross-region conditions: two regions can each grant the lease. Use a
//     table in one region (every candidate talks to that region).
//   - Terms strictly increase on every change of holder or incarnation and
//     after every release, and never wrap: at backendkit.MaxTerm Acquire
//     fails with an error matching backendkit.ErrTermExhausted and writes
//     nothing.
//   - Terms also rise across a deleted item (an operator cleaning the
//     table, a deleted and re-created table, DynamoDB TTL): with no item to
//     read, the next term is the candidate's clock in microseconds, above
//     every term handed out earlier unless that candidate's wall clock lags
//     by more than the time since the lost term was handed out. Keep clocks
//     synchronised (NTP); an item that survives keeps terms rising
//     whatever the clocks say.
//   - There is no push wake-up (the Backend does not implement
//     backendkit.Notifier; DynamoDB Streams would need a poller of their
//     own): followers learn of a release at their next retry.
//
// # Foreign items and hostile records
//
// Everything read from the table is validated before the elector sees it.
// An item whose "lease" is not a string, larger than 64 KiB
// (backendkit.MaxValueBytes), not this envelope, or holding a record that
// backendkit.UnmarshalRecord rejects (holder, election or metadata not
// printable UTF-8, term outside [1, MaxTerm], duration not in (0,
// backendkit.MaxRecordDuration]), that names another election, or whose
// "version" is not a number written as a decimal integer in [1, 2^63−2],
// gives an error matching backendkit.ErrInvalidRecord from Acquire and
// Get, quoting no stored value. Such an item is never taken over. An
// operator recovers by deleting the item; the election then goes on at a
// clock-seeded term.
//
// # Errors
//
// Every error that leaves the Backend, and the config module's, passes
// through backendkit.RedactError: URL userinfo and query strings and
// key=value secrets are removed, and for the config module's backends the
// configured secret access key and session token too (a Backend from New
// does not know the client's credentials; SigV4 never sends the secret
// key). Errors still match the contract's sentinels with errors.Is.
//
// # Tables
//
// New uses the application's *dynamodb.Client and does no I/O. Unless
// Options.SkipCreateTable, the Backend's first operation creates the table
// if it is missing (CreateTable: on-demand capacity, PAY_PER_REQUEST) and
// waits for it to be active, within that operation's context; on AWS this
// takes seconds, so an elector's first attempts may fail and be retried.
// An existing table is checked: a key other than "election" alone gives
// an error matching ErrTableSchema. Call CreateTable at start-up, or create
// the table yourself and set SkipCreateTable, where the application's
// role may not create tables. The role needs dynamodb:GetItem and
// dynamodb:PutItem on the table (and dynamodb:DescribeTable and
// dynamodb:CreateTable without SkipCreateTable).
//
// # Configuration
//
// The configuration-document module fxelection.backends.dynamodb
// (ConfigModule) builds a client of its own from these settings:
//
//   - region (required): the table's AWS region.
//   - endpoint: the service's URL, for DynamoDB Local or a VPC endpoint
//     (default: the region's AWS endpoint).
//   - table (required): Options.Table.
//   - access_key_id, secret_access_key (a secret): static credentials, set
//     together (default: the AWS SDK's default credential chain:
//     environment, shared files, container and instance roles); the secret
//     key is never put in errors.
//   - session_token (a secret): the session token of temporary
//     credentials, only with the two above.
//   - skip_create_table: Options.SkipCreateTable (default false).
package ddblease
