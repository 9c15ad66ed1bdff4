// Package etcdlease is the etcd v3 backend for fxelection: leases live in
// etcd, a Raft-replicated, linearizable key-value store, and expire by
// etcd's own lease TTLs, so no client clock is ever compared with another's.
// The term (fencing token) is an etcd revision, which only ever increases.
// It uses go.etcd.io/etcd/client/v3 and lives in a Go module of its own, so
// applications using the other backends do not get etcd's or gRPC's
// dependencies. Tested with etcd 3.7.
//
//	b, err := etcdlease.New(client, etcdlease.Options{}) // or etcdlease.Module in fx
//
// Get it with go get github.com/fxelection/fxelection/modules/etcd@vX.Y.Z,
// at the same version as the root module. Its in-repository replace
// directive applies only inside the repository (a consumer ignores it), so
// its example programs (./example, a flags-to-document main like
// example-app's, and ./fxexample) run from a clone.
//
// # Summary
//
//   - Expiry: server-authoritative, by the etcd leader's lease TTL: the
//     lease duration in whole seconds, rounded up, or etcd's minimum TTL if
//     that is longer (see Mapping). When etcd leadership moves, the new etcd
//     leader gives every lease its full TTL again, so a lease can only last
//     longer than asked. No client clock is compared with another's.
//   - Fencing term: the revision of the etcd transaction that started the
//     leadership; revisions only grow, so terms survive release, expiry,
//     deletes, restarts and compaction (see Guarantees).
//   - Push wake-up: one watch per Backend on the key prefix for deletions
//     (release, expiry, a delete from outside) and for puts that start a
//     new leadership on a live key (Transfer, a new incarnation).
//   - Failover: etcd deletes a crashed leader's key when its TTL has run
//     out since its last renewal and the etcd leader revokes the lease; the
//     watch wakes the followers at once, and without push a follower takes
//     it at its next retry, within 1.2 × RetryPeriod after that: at most
//     TTL + revocation + 1.2 × RetryPeriod after the last renewal, plus a
//     round trip.
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): one transaction, with Release's checks as its
//     compares, moves the key from the caller's etcd lease to the
//     successor's record on a new etcd lease, with a new term (the
//     transaction's revision), so the key is never free in between.
//   - What it cannot promise: terms go back only if etcd's data is replaced
//     by an older copy (restore snapshots with a revision bump); candidates
//     behind a minority member cannot acquire; a deposed leader paused past
//     LeaseDuration−RenewDeadline still acts with its older term (fence
//     writes with the term).
//
// # Mapping
//
// Each election is one key, <prefix><election> (prefix "fxelection/" by
// default), whose value is a small JSON record:
//
//	{"fxelection":2,"holder":"web-1","incarnation":"9f2c41d07ab3e655","metadata":{"addr":"10.0.0.1:8080"},"duration_ms":15000}
//
// and, when a put continues a leadership begun by an earlier write, the
// term it keeps: ,"term":1234.
//
// The key is attached to an etcd lease granted by the holder with a TTL of
// the lease duration in whole seconds, rounded up (etcd may raise it to its
// minimum TTL, 1.5 election timeouts: 2s with etcd's default 1s election
// timeout). What the elector needs maps onto etcd as follows:
//
//   - Acquire: a linearizable read of the key; if it is absent (free,
//     released or expired: etcd deletes a lease's keys when the lease ends)
//     or holds the caller's own record, a Grant and one transaction: if the
//     key is still absent (create revision 0) or unchanged (the mod revision
//     read), put the record attached to the new etcd lease; else read it
//     back to name the holder. A follower's poll is the read alone.
//   - Term: the revision of the transaction that started the leadership. A
//     new leadership (a free key, or a live key of the caller's identity
//     but another incarnation: a restarted process, or the same one after a
//     step-down) writes a value without a term, and its term is the key's
//     mod revision, that is that transaction's revision: above every
//     revision the cluster ever had, so above every earlier term. A put
//     that continues a leadership (the same identity and incarnation
//     re-acquiring after a lost response; a request naming no incarnation
//     re-acquiring its identity's record; a renewal moving the key to a
//     longer etcd lease) states the term it keeps in the value. etcd cannot
//     delete and re-create a key in one transaction, so a new create
//     revision is not an option for a new incarnation on a live key; the
//     mod revision of the write that took it is.
//   - Version: the etcd lease ID in hexadecimal.
//   - Renew: KeepAliveOnce on the etcd lease, then a transaction comparing
//     that the key is still attached to that etcd lease (only the write
//     that granted it attached it), reading the record back to check the
//     holder and the term. Expiry is etcd's: server-authoritative.
//   - Release: revoke the etcd lease after checking the key is still ours
//     (that etcd lease, holder, term); etcd deletes the key with it,
//     atomically. A key on another etcd lease is never touched.
//   - Transfer: a read of the key and Release's checks (that etcd lease,
//     holder, term), a Grant for the successor and one transaction: if the
//     key is still on the caller's etcd lease with the mod revision read,
//     put the successor's record (no term: a new leadership, whose term is
//     the transaction's revision) attached to the new etcd lease. The
//     caller's etcd lease, holding nothing now, is then revoked as Release
//     revokes it. A lease no longer the caller's changes nothing
//     (backendkit.ErrLeaseLost).
//   - Get: the key, plus the etcd lease's remaining TTL (TimeToLive) for
//     ExpiresAt. A key is a lease for as long as etcd keeps it, as Acquire
//     and Renew see it: an etcd lease in its last second (etcd reports TTL
//     0) or past its TTL but not yet revoked by the etcd leader is still
//     reported; ErrNoLease means the key is gone.
//   - Push wake-up (backendkit.Notifier): one watch on the prefix; a
//     deletion wakes the election's subscribers, and so does a put of a
//     record without a term on a key that was live (a Transfer, or a new
//     incarnation taking its holder's record over). Other puts (renewals,
//     acquisitions of an absent key) wake no one.
//
// etcd's concurrency.Election offers the same fencing (its leader key's
// create revision) with a different shape: candidates queue as keys and wait
// on a watch of their predecessor. This package keeps the fxelection
// contract (one key per election, followers poll or wake) so that the
// elector, its renew deadline, metrics and watcher work unchanged.
//
// # Records of other formats
//
// A value that is not a format 2 record ({"fxelection":2,…}) is a foreign
// value: Acquire and Get report backendkit.ErrInvalidRecord, and the key is
// never taken over before its etcd lease expires.
//
// # Guarantees
//
// Terms strictly increase on every change of holder and every new
// incarnation of the holder, survive release, expiry, a delete from outside
// and a restart of etcd (revisions are persisted in etcd's write-ahead log
// and backend), and stay the same while one incarnation renews or
// re-acquires. Compaction removes old revisions of keys, never the current
// one: it does not change any live key's revisions or value (where a
// continued term is stated) nor the next revision, so it cannot make terms
// go back. It can only end a watch
// that was resuming from a compacted revision; the push watch then starts
// again at the current revision and wakes every subscriber once. Terms go
// back only if etcd's data is replaced by an older copy: restoring a
// snapshot restores its revision, so restore with etcdutl's revision bump
// (by more than the writes since the snapshot) when terms fence writes.
// Revisions are int64, so terms never pass backendkit.MaxTerm.
//
// Every etcd lease TTL is kept by the etcd leader. When leadership of the
// etcd cluster moves, the new etcd leader gives every lease its full TTL
// again, so an election's lease can only last longer than asked, never
// shorter.
//
// # Partitions
//
// A leader cut off from the etcd majority (its own member isolated, or its
// link to the cluster cut) cannot renew: keep-alives and transactions need
// the etcd leader and a quorum, so Renew fails (or times out) and the
// elector steps down when its RenewDeadline passes, measured from the start
// of the last renewal that succeeded. On the majority side the etcd lease
// expires no earlier than its TTL after that renewal reached the etcd
// leader, which is after the renewal started, and LeaseDuration is longer
// than RenewDeadline: so the old leader stops believing before another
// candidate can acquire, assuming the two machines' clocks run at about the
// same rate (not that they agree). A minority member cannot serve the
// linearizable reads Acquire and Get use, so candidates behind it only
// report errors; none of them can acquire. As always, guard external writes
// with the term: a deposed leader paused longer than the margin still
// carries an older term.
//
// # Foreign values
//
// A key under the prefix holding anything but a valid record gives an error
// matching backendkit.ErrInvalidRecord from Acquire and Get, and is never
// taken over; it goes away when its etcd lease expires (a key without an
// etcd lease never would, and is invalid too). Valid means: at most 64 KiB
// of UTF-8 JSON in the format above, nothing unknown or trailing, the
// duration in (0, backendkit.MaxRecordDuration], the holder and metadata
// accepted by Lease.Validate (printable UTF-8, within the size
// limits), a positive create revision and a mod revision not below it.
// Renew reports backendkit.ErrLeaseLost and Release does nothing for such a
// key. So nothing a foreign writer puts in etcd reaches an elector, its
// metrics or a terminal unchecked.
//
// # Secrets
//
// Every error a Backend returns passes through backendkit.RedactError with
// the client's password and token, and its user name when at least 4 bytes
// long. The fxelection.backends.etcd module refuses endpoints with user
// info, without quoting them.
//
// # Configuration
//
// The module fxelection.backends.etcd (ConfigModule) builds a client of
// its own from these settings; the client fetches its authentication token
// when it starts, so wrong credentials fail the app's start:
//
//   - endpoints (required, a list of strings): the members' client
//     addresses, host:port, http://host:port or https://host:port (https
//     implies TLS); no user info.
//   - username, password (a secret): etcd authentication, set together.
//   - dial_timeout: bounds fetching the token and the client's keep-alive
//     probes (default 5s).
//   - tls, ca_file, cert_file, key_file: TLS 1.2 or later (default off); a
//     PEM bundle of CAs instead of the system's roots; a client certificate
//     and its key, both or neither.
//   - prefix: Options.KeyPrefix (default "fxelection/"; printable UTF-8, at
//     most 512 bytes).
//   - push: watch wake-up (default true).
package etcdlease
