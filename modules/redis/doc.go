// Package redislease is the Redis backend for fxelection: leases live in
// Redis and expire by Redis's own clock (PX), so no client clock is ever
// compared with another's. It works with a single node, a Sentinel failover
// client and Redis Cluster through go-redis's redis.UniversalClient. It needs
// Redis 5 or later and is tested with Redis 7.0.
//
//	b, err := redislease.New(client, redislease.Options{}) // or redislease.Module in fx
//
// # Summary
//
//   - Expiry: server-authoritative, by Redis's clock (PX, in milliseconds).
//     No client clock is compared with another's.
//   - Fencing term: the larger of a per-election counter plus one and the
//     server's clock in microseconds, exact up to backendkit.MaxTerm (see
//     Fencing terms).
//   - Push wake-up: Release and Transfer publish on <prefix>wake; each Backend
//     listens on one pub/sub connection of its own (see Push wake-up).
//   - Failover: a crashed leader's lease expires LeaseDuration after its
//     last renewal ran in Redis, and a follower takes it at its next retry:
//     within LeaseDuration + 1.2 × RetryPeriod of that renewal, plus a round
//     trip. A released lease is taken within milliseconds (push).
//   - Batching: Backend implements backendkit.BatchRenewer and
//     backendkit.BatchAcquirer (the renew or acquire script for many
//     leases in one pipeline).
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): the caller's lease released and the
//     successor's record written in one script, with a new term above the
//     released one, so no other candidate can take the lease in between.
//   - What it cannot promise: Redis without persistence loses leases on a
//     restart, and so do FLUSHALL, eviction and a failover to a replica that
//     had not received the last write; the election is then free at once,
//     and until the old leader's next renewal fails two candidates may
//     believe they lead (fence writes with the term). Terms still rise
//     after such a loss unless the server's clock reads earlier than the
//     last term. For fencing run Redis with appendonly yes and a
//     maxmemory-policy that never evicts the keys (noeviction or
//     volatile-*). Measured (see Fail-over): two leaders for at most
//     0.55 s with RetryPeriod 300 ms, and no term repeated.
//
// # Layout
//
// Each election uses two keys in the same hash slot, so every script works
// on Redis Cluster:
//
//	<prefix>{<election>}:lease  the lease record, a string with PX expiry
//	<prefix>{<election>}:term   the term counter; never deleted, no expiry
//
// The record reads, for example,
//
//	fxe2|1764512345678901|5|web-1|9f86d081884c7d65|15000|1764512345678|{"addr":"10.0.0.1:8080"}
//
// that is: format, term, holder length, holder, nonce (16 hex digits
// naming the acquiring run; see Incarnations), duration (ms), acquisition
// time (Unix ms, server clock) and metadata (JSON). Any other value under
// the lease key is a foreign value (see Foreign values). It is not the JSON
// record of backendkit.MarshalRecord because the Lua scripts read the
// holder and term of the stored value on every call: a length-prefixed prefix is matched
// with string.sub and string.match, where JSON would need cjson to decode
// the whole value (metadata included) inside the script, on every renewal.
// The braces are Redis Cluster's hash tag; '{', '}' and '%' in an election
// name are percent-escaped inside it, so every name maps to one slot. The prefix
// defaults to "fxelection:" and must not contain braces (Options.Validate
// refuses them). Release and Transfer publish the election's name on the
// channel <prefix>wake.
//
// Acquire, Renew, Release and Transfer are one Lua script each (one round trip, run
// with EVALSHA and re-sent on NOSCRIPT), and so is Get. Acquire takes the
// lease if the key is absent (free, expired or released), refreshes it if
// the caller's run already holds it (same term), takes it at once with a
// new term if another run of the caller's identity holds it (see
// Incarnations), and otherwise reports the holder. Renew extends the lease only while the holder and the term match. Release
// deletes only the caller's own lease and publishes a wake-up. Transfer
// is Release's check and the acquire script's write for the successor in
// one script: it ends only the caller's own lease (matched as Release
// matches it), writes the record Acquire would write for the successor on
// a free lease, with a new term, and publishes a wake-up; a lease no
// longer the caller's is left alone (backendkit.ErrLeaseLost). Redis
// expires the lease; no client clock is involved.
//
// # Incarnations and fixed identities
//
// An elector sends an incarnation token with every Acquire
// (backendkit.AcquireRequest.Incarnation), new for every Elector and after
// every leadership it announced has ended. The record keeps a nonce
// derived from it: the token itself when it is 16 lowercase hex digits
// (backendkit.NewIncarnation's form, so an elector's record shows its
// incarnation), else the first 64 bits of a SHA-256 of it; a request that
// names no incarnation gets a random nonce, new on every Acquire. The
// acquire script compares the live record's nonce with the request's, in
// the same script that decides everything else:
//
//   - the same identity and nonce (a retry after a lost reply) keeps the
//     term;
//   - the same identity with another nonce — a restarted process with a
//     fixed Identity, or the same elector after it stepped down — takes
//     the lease at once, without waiting for the old record to expire, with
//     a new term from the counter as a new holder would get, strictly above
//     every term the counter gave and above the live record's term even if
//     the counter was lost meanwhile (the counter is raised to it first);
//   - a request naming no incarnation keeps the term whatever the nonce
//     (the Elector's hand-over hint names none, so that a successor that
//     holds the lease already keeps its term).
//
// So a fixed Identity gives an immediate takeover on restart, and the
// restarted process fences off its predecessor: should the predecessor
// only have been paused (SIGSTOP, a frozen VM, a partition), its Renew
// fails (the term changed), its delayed Release frees nothing, and its late
// writes carry a lower term, which every fencing guard (redisfence
// included) refuses. What it costs: the term changes on every restart, and
// a paused predecessor keeps believing it leads until its own renew
// deadline, so writes that are not guarded by the term can still overlap
// for that long; a fixed identity also means a second process started with
// it by mistake takes the lease from the first at once, every time either
// retries (each is a new incarnation to the other), instead of waiting as
// a follower: give every concurrently running candidate an identity of its
// own. Two incarnations whose nonces collide (a 2^-64 chance per pair, or
// two tokens chosen to collide) are taken for one and share a term.
//
// The record stores the nonce, not the token: Acquire returns the
// request's Incarnation, Renew and RenewBatch keep the caller's while the
// record's nonce still derives from it (and clear it otherwise), and Get
// returns an empty Incarnation with the nonce as Version.
//
// # Delayed releases
//
// Release also matches the nonce: the lease's Version, which Acquire sets
// to the nonce it stored and Renew, RenewBatch and Get set to the record's
// current one. A release from an earlier incarnation, stalled in the
// network and delivered after the new incarnation took over, frees
// nothing (its term and nonce are both another's), and neither does one
// from an earlier acquisition by a request naming no incarnation, which
// keeps the term but writes a new nonce. A Lease with an empty Version
// (built by hand) is matched on holder and term only.
//
// # Fencing terms
//
// The term counter outlives the lease, so terms keep increasing across
// releases and expiries. A new term is the larger of the counter
// plus one and the Redis server's clock in microseconds (TIME), so terms look
// like 1764512345678901 rather than 1, 2, 3. This keeps terms increasing
// even when the counter is lost: after FLUSHALL or FLUSHDB, after a restart
// without persistence, when a maxmemory allkeys-* policy evicts the counter,
// or after a failover to a replica that had not yet received the last
// increment. A term can then repeat or go backwards only if the counter was
// lost AND the (new) server's clock reads earlier than the last term issued:
// a clock stepped back by more than the time between the lost acquisition
// and the next one, or a failover to a replica whose clock lags by that
// much. Redis cannot run more than one script per microsecond, so the
// counter never outruns the clock. The same holds when an operator deletes
// the keys (DEL of the lease and the term counter): the next term is still
// above every earlier one.
//
// For fencing, also run Redis with appendonly yes (appendfsync always if a
// lost second of writes matters) and never evict the counter
// (maxmemory-policy noeviction or volatile-*).
//
// Terms are exact up to backendkit.MaxTerm (2^63−1): the scripts keep them
// as strings of digits and never as Lua numbers (doubles, exact only below
// 2^53), and count with INCR. When the counter reaches MaxTerm, Acquire
// refuses with an error matching backendkit.ErrTermExhausted rather than
// wrap; the election then needs an operator (delete the term key: the next
// term is the clock again).
//
// A lease record lost the same way (flush, restart without persistence)
// frees the election at once: the leader learns it at its next renewal and
// steps down, and another candidate may lead in the meantime, with a higher
// term. That is the reason to guard writes with the term.
//
// # Fail-over
//
// Redis replicates asynchronously: a primary acknowledges a write before
// its replicas have it, so a replica promoted after the primary died
// (Sentinel, a managed service's fail-over, REPLICAOF NO ONE) lacks the
// primary's last writes, and a restart without persistence loses every
// key. What that does to an election: a lost acquisition or renewal, or a
// lost lease key, lets a candidate take the lease on the new primary while
// the old holder still believes it leads, until its next renewal fails
// there (at most RenewDeadline after its last successful one); the new
// term is still higher, since it is seeded from the server's clock (see
// Fencing terms). A redisfence key in the same Redis is lost the same way,
// with the data written beside it: the guard is as durable as the Redis it
// lives in. After the fault it takes the first term written, and a deposed
// writer's term is below it once the new leader has written; but a write
// with a newer term that the fault lost no longer fences anyone, so an
// older writer still running then (a paused process) is accepted until the
// new leader writes again. Where fenced writes must survive a fail-over,
// keep them in a store that does not lose acknowledged writes (PostgreSQL
// with synchronous replication, say), or have the leader repeat a guarded
// write (redisfence's Advance) after every fail-over.
//
// Measured (RELIABILITY.md, "Store fail-over and durability"; 3 elections
// of 3 candidates, LeaseDuration 2 s, RenewDeadline 1.3 s, RetryPeriod
// 300 ms, a guarded write every 20 ms): of 1,000 promotions of a replica
// after a SIGKILL of its primary, 191 lost acknowledged writes and 16 left
// two electors believing they led, for at most 0.544 s; of 1,000 restarts
// without persistence, 979 did, for at most 0.475 s (median 93 ms). No term
// repeated or went back, and redisfence accepted no stale write, except
// where a second restart came while a deposed leader still believed it led
// and erased the newer term (the window above).
//
// # Push wake-up
//
// A Backend implements backendkit.Notifier with one pub/sub connection
// shared by all its elections, started by the first Subscribe and closed
// when the last subscription is cancelled. It reconnects by itself (pinging
// an idle connection so a silently dead one is replaced) and wakes every
// subscriber after each (re)subscription, since a release may have been
// missed meanwhile; while it is down, followers still poll every
// RetryPeriod.
//
// # Timeouts
//
// go-redis honours context deadlines only when the client's
// ContextTimeoutEnabled option is set; without it a hung server holds a call
// for up to the client's ReadTimeout (the elector still stops believing it
// leads at its renew deadline). Set it on the client you pass to New; the
// client of the configuration-document module fxelection.backends.redis
// (ConfigModule) has it set.
//
// # Foreign values
//
// A lease key holding anything but a valid lease record gives an error
// matching backendkit.ErrInvalidRecord from Acquire and Get, and the key is
// never taken over before it expires. Valid means: a string (another type
// is not) in the format above with every number in canonical decimal form,
// the term in [1, backendkit.MaxTerm], the duration in
// (0, backendkit.MaxRecordDuration], and the holder and metadata accepted by
// Lease.Validate (printable UTF-8, no control characters or terminal
// escapes, within the size limits). So nothing a foreign writer puts in
// Redis reaches an elector, its metrics or a terminal unchecked. The one
// exception to "never taken over" is a damaged record that names the
// caller's own identity, a valid term and acquisition time and a duration
// of digits: Acquire treats it as the caller's identity's lease and
// rewrites it (keeping its term only for the same incarnation, as above).
// Renew reports backendkit.ErrLeaseLost (and
// ErrInvalidRecord for a value of another type): the lease is no longer
// ours. Release leaves such a key alone. A term counter that is not a
// canonical integer in [0, MaxTerm] makes Acquire fail with
// ErrInvalidRecord.
//
// # Secrets
//
// Every error a Backend returns passes through backendkit.RedactError with
// the client's password and user name (user names shorter than 4 bytes
// excepted) when the client is a *redis.Client, *redis.ClusterClient or
// *redis.Ring, so neither appears even when an SDK message quotes an
// address or path that contains them. The fxelection.backends.redis
// module refuses an addr setting that is a URL or has user info, without
// quoting it.
//
// # Configuration
//
// The configuration-document module fxelection.backends.redis
// (ConfigModule) builds a client of its own, with ContextTimeoutEnabled
// set, from these settings:
//
//   - addr (required): host:port, not a URL (user info is refused);
//     comma-separated for Cluster, or the Sentinels' addresses with master.
//   - master: the Sentinel master name.
//   - username, password (a secret): ACL credentials.
//   - db: the database number, a JSON integer (default 0; Cluster has only
//     0).
//   - tls: connect with TLS 1.2 or later (default false).
//   - prefix: Options.KeyPrefix (default "fxelection:").
//   - push: pub/sub wake-up on release (default true; false sets
//     Options.DisablePush).
package redislease
