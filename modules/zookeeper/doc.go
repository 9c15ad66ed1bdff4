// Package zklease is the Apache ZooKeeper backend for fxelection: each
// election's lease is an ephemeral znode of the candidate's ZooKeeper
// session, so a crashed, paused or cut-off leader's lease is ended by
// ZooKeeper itself when its session expires, and the term (fencing token)
// is the znode's creation zxid, which only ever grows. It uses
// github.com/go-zookeeper/zk (v1.0.4), the maintained fork of
// samuel/go-zookeeper that most Go programs use (multi, sync, watches,
// digest auth, no cgo), and lives in a Go module of its own, so
// applications using the other backends do not get its dependency. Tested
// with ZooKeeper 3.8 (Debian bookworm's package), standalone.
//
//	conn, _, err := zk.Connect([]string{"zk-0:2181"}, 15*time.Second)
//	b, err := zklease.New(conn, zklease.Options{SessionTimeout: 15 * time.Second}) // or zklease.Module in fx
//
// Get it with go get github.com/fxelection/fxelection/modules/zookeeper@vX.Y.Z,
// at the same version as the root module.
//
// # Summary
//
//   - Expiry: two bounds, whichever comes first. ZooKeeper expires the
//     holder's session when it has heard nothing from it for the
//     negotiated session timeout, and deletes its ephemeral znodes
//     (server-authoritative: a crash, a pause, a partition). And the
//     holder's own Backend deletes its znode once Duration has passed on
//     its own monotonic clock since the start of its last successful
//     Acquire or Renew (an elector that stopped renewing in a process that
//     still lives, whose session ZooKeeper keeps alive). No clock is ever
//     compared with another machine's.
//   - Timing rule: RenewDeadline must be shorter than the negotiated
//     session timeout, with a margin (see Sessions and leases). Electors,
//     pools and lockers on a Backend that states its session timeout
//     (Options.SessionTimeout; the config module always does) refuse a
//     RenewDeadline that is not, and so does a configuration document.
//   - Fencing term: the creation zxid of the lease znode (the zxid of the
//     multi that created it); zxids only grow, so terms survive release,
//     expiry, deletes from outside and restarts (see Guarantees).
//   - Push wake-up: one ZooKeeper child watch per subscribed election on
//     the election's node: a lease znode deleted (release, expiry, a
//     session's end, a delete from outside) or replaced (hand-over, new
//     incarnation) wakes the followers at once.
//   - Failover: ZooKeeper deletes a crashed leader's lease znode when its
//     session expires: the negotiated session timeout after the server last
//     heard from it, rounded up to ZooKeeper's next tick. The child watch
//     wakes the followers at once; without push a follower takes it at its
//     next retry, within 1.2 × RetryPeriod after that: at most session
//     timeout + tickTime + 1.2 × RetryPeriod after the crash (a hung
//     elector in a live process: LeaseDuration + 1.2 × RetryPeriod after
//     its last renewal), plus a round trip.
//   - Hand-over: Backend implements backendkit.Transferer with one multi
//     that deletes the caller's znode and creates the successor's record;
//     that record is a persistent znode (not ephemeral: it must outlive the
//     resigning leader's session) that other candidates may take only after
//     observing it unchanged for its duration.
//   - What it cannot promise: terms go back if ZooKeeper's data is wiped
//     or replaced by an older copy; the session timeout is the server's to
//     negotiate (a server that grants less than RenewDeadline breaks the
//     timing rule: check its maxSessionTimeout); a deposed leader paused
//     past the margin still acts with its older term (fence writes with the
//     term); a lease znode deleted from outside frees the election at once
//     while its holder believes it leads until its next renewal (see
//     Deletes from outside). The client, go-zookeeper/zk v1.0.4, re-arms watches after a
//     reconnect reading the last zxid its receive loop writes without
//     synchronization (upstream go-zookeeper/zk#35): the race detector
//     reports it, and the re-armed watches may be relative to a slightly
//     older zxid, which can only repeat a notification (a spurious
//     wake-up, a hint here), never lose a lease; Options.DisablePush
//     avoids watches altogether.
//
// # Mapping
//
// Each election has a persistent node <prefix>/<escaped name> (prefix
// "/fxelection" by default; the name keeps ASCII letters, digits, '-' and
// '_', every other byte becomes %XX, so any election name is one znode
// name), created on first use and never deleted by the Backend. Its one
// child, when the election is held, is the lease znode
// lease-<10-digit sequence>, whose data is a small JSON record:
//
//	{"fxelection_zk":1,"election":"billing","holder":"web-1","incarnation":"9f2c41d07ab3e655","metadata":{"addr":"10.0.0.1:8080"},"duration_ms":15000}
//
// and, when it continues a leadership begun on an earlier znode, the term
// it keeps: ,"term":1234. The sequence number makes every lease znode's
// path unique (while the election's node lives), so Renew, Release and the
// expiry deletion address exactly the znode their lease created, never a
// later holder's; the creation zxid, checked too, tells a re-created
// election node's znodes apart. Every change of leadership is one
// ZooKeeper multi that also writes the election node, conditioned on the
// version of it that was read: of two candidates racing on the same
// state, one multi fails.
//
//   - Acquire: list the election node (its version and child) and read
//     the lease znode. Free: a multi that bumps the election node's
//     version and creates an ephemeral sequential lease znode of this
//     session; its term is the multi's zxid (read from the election node's
//     new Mzxid: all writes of a multi share one zxid). A live record of
//     req.Identity under another incarnation, or an orphan (persistent)
//     record this Backend has seen unchanged for its whole duration: the
//     same multi also deletes the old znode (conditioned on its version),
//     and the new znode's creation zxid is again a new, higher term. A
//     record req continues (backendkit.AcquireRequest.Continues): this
//     session's own znode is rewritten in place (same zxid, same term);
//     one of another session, or an orphan, is replaced by a znode of this
//     session that states the continued term. Anyone else's: a
//     *backendkit.HeldError.
//   - Version: the lease znode's name and creation zxid.
//   - Renew: a sync, then a read of the lease znode, which must still have
//     the creation zxid, be owned by this Backend's current session, name
//     the holder and term; and this Backend's own expiry of it must not
//     have come. Renew writes nothing: it moves the lease's expiry on this
//     process's clock, and ZooKeeper keeps the session alive by itself
//     (the client pings). A session ZooKeeper expired makes go-zookeeper
//     open a new one; the old session's znodes are gone, so Renew reports
//     backendkit.ErrLeaseLost and the elector acquires afresh, with a new
//     term.
//   - Release: delete the lease znode, if it is still the lease's
//     (creation zxid, holder, term), conditioned on its version.
//   - Transfer: Release's checks, then one multi: the election node's
//     version bumped, the caller's znode deleted, and the successor's
//     record created as a persistent sequential znode, so the election is
//     never free in between. Its term is the multi's zxid.
//   - Get: a sync, then the election node's child and its record.
//     ExpiresAt is zero: when an ephemeral lease ends is known only to its
//     holder's clock and ZooKeeper's session tracker.
//   - Push wake-up (backendkit.Notifier): a child watch on each subscribed
//     election's node (an existence watch while the node does not exist
//     yet), set again after it fires; any change of its children wakes
//     the election's subscribers, and so does setting it again after a
//     failure (a change may have been missed). Renewals write nothing, so
//     they wake no one.
//
// go-zookeeper's calls take no context: every method returns as soon as
// its context is done, and the call it was waiting for finishes on a
// goroutine of its own when the server answers or the connection is closed
// (a write it made then still counts: a lease znode created that way gets
// the same expiry as any other).
//
// ZooKeeper's classic election recipe (Curator's LeaderLatch: candidates
// queue as ephemeral sequential znodes, each watching its predecessor)
// makes the session the only lease. This package keeps the fxelection
// contract instead (one record per election, a lease Duration, followers
// poll or wake, fencing terms, hand-over), so that the elector, its renew
// deadline, metrics and watcher work unchanged. The contract needs a lease
// to end when its holder stops renewing even while its process and session
// live (an elector that stepped down without releasing, a hung leader
// loop): that is the holder-side expiry.
//
// # Sessions and leases
//
// One Backend uses one connection, so one ZooKeeper session, for all its
// elections. The session timeout is asked for when the connection is made
// (zk.Connect; the config module's session_timeout, default 15s) and
// negotiated by the server into [minSessionTimeout, maxSessionTimeout]
// (by default 2 and 20 tickTimes: 4s to 40s with tickTime 2000).
//
// A leader cut off from ZooKeeper cannot renew: Renew fails or times out,
// and the elector steps down once RenewDeadline has passed since the start
// of its last successful renewal. ZooKeeper expires the session no earlier
// than the negotiated timeout after it last heard from the client, which
// is no earlier than that renewal reached it, after it started. So the
// rule is:
//
//	RenewDeadline ≤ negotiated session timeout − margin
//
// with a margin for the two machines' clock rates and ZooKeeper's tick
// rounding (a tick or two is plenty; the server expires sessions only at
// tick boundaries, which makes them later, never earlier). Then a leader
// always stops believing before ZooKeeper can delete its znode, by the
// margin: here it is the session timeout − RenewDeadline, not
// LeaseDuration − RenewDeadline as on other stores, when the session
// timeout is the shorter. The usual
// choice is a session timeout equal to LeaseDuration (with the defaults:
// LeaseDuration 15s, RenewDeadline 10s, session 15s), which makes a
// crashed leader's lease end after about LeaseDuration, as on other
// backends. A longer session only delays failover after a crash; one not
// longer than RenewDeadline is unsafe (two leaders after a partition, for
// up to their difference), so it is refused: Options.SessionTimeout
// states the session timeout asked for (the config module sets it from
// session_timeout), the Backend (and the config module) report it as a
// backendkit.RenewDeadlineLimiter, and fxelection.New (every elector,
// Group member and pool shard), lock.New and a configuration document's
// validation refuse a RenewDeadline that is not shorter, with an error
// naming RenewDeadline (renew_deadline) and the session timeout
// (session_timeout), quoting neither. The margin is the operator's to
// leave; a Backend whose Options do not state the session timeout is not
// checked. go-zookeeper does not report the
// negotiated value, so check the server's maxSessionTimeout (and
// minSessionTimeout) against the session timeout asked for.
//
// The holder-side expiry uses the holder's clock alone: the elector's
// RenewDeadline and the Backend's Duration are measured from the start of
// the same renewal on the same monotonic clock, and LeaseDuration >
// RenewDeadline, so the elector always stops believing first. If the
// process is paused (GC, SIGSTOP), neither runs, but neither does the
// client's ping: ZooKeeper expires the session. A create whose reply was
// lost (the connection broke) may have been applied all the same: the
// Backend then looks at the election again once the attempt's Duration has
// passed and deletes a lease znode of its session that it does not know
// of, so that no lease outlives its Duration unrenewed. Backend.Close stops the
// holder-side expiry; close the connection after it (which ends the
// session and so every lease of it). Close the connection only after the
// electors using it have stopped (fx stops them first): closing a session
// deletes its lease znodes at once, and another candidate may then lead
// while an elector of the closed session still believes it leads, until its
// RenewDeadline.
//
// An orphan record — persistent, owned by no session: a hand-over hint,
// or a continued leadership's record whose session ended — ends by
// observed time (backendkit.ExpiryTracker): a candidate may take it over
// only after it has seen the same write (its Mzxid and name) unchanged for
// the record's whole duration on its own monotonic clock.
//
// # Hand-over
//
// Elector.ResignTo uses Transfer, which writes the successor's hint (its
// identity, no incarnation) in the multi that deletes the leader's znode.
// The hint is persistent because the resigning leader typically exits
// right after, closing its session: an ephemeral hint would vanish with
// it and leave the election free to anyone. The successor takes the hint
// at its next attempt (woken by the watch) as a new incarnation of its
// identity, with a higher term, on an ephemeral znode of its own session;
// a successor that never comes leaves the hint to expire by observed time
// after LeaseDuration, after which anyone may take it.
//
// # Guarantees
//
// Terms strictly increase on every change of holder and every new
// incarnation of the holder (a new znode: a later zxid, above every zxid
// the ensemble ever had), survive release, expiry, session expiry, a
// delete from outside (of the lease znode or the whole election node) and
// a restart of ZooKeeper (zxids are in its transaction log and
// snapshots), and stay the same while one incarnation renews or
// re-acquires. A continued term stated in a record is accepted only if it
// is not above the znode's own creation zxid. Terms go back only if
// ZooKeeper's data is wiped or replaced by an older copy (zxids start
// again); restore with care when terms fence writes. zxids are int64, so
// terms never pass backendkit.MaxTerm.
//
// # Deletes from outside
//
// An operator (or a script) that deletes the lease znode, or the whole
// election node, frees the election at once: candidates cannot tell that
// deletion from a release or a session's expiry (after which taking over
// at once is safe), so they do not wait, and the child watch wakes them.
// The holder learns of it at its next renewal (Renew finds the znode
// gone: backendkit.ErrLeaseLost), within RetryPeriod, or, if its renewals
// fail meanwhile, at its RenewDeadline; until then it still believes it
// leads while a woken candidate already does: two leaders for up to
// RetryPeriod (up to RenewDeadline). The new leader's term is a later
// zxid, so fenced writes stay safe. To move a leadership use
// Elector.Resign or ResignTo, or stop the holder first; a hung holder's
// lease ends by itself (session expiry, or the holder-side expiry).
//
// # Partitions
//
// A leader cut off from the ensemble's quorum cannot renew (Renew's sync
// needs the ZooKeeper leader) and steps down at its RenewDeadline; its
// session expires on the majority side no earlier than the negotiated
// timeout after it was last heard (see the rule above). Candidates behind
// a minority server cannot write: none of them can acquire. As always,
// guard external writes with the term: a deposed leader paused longer than
// the margin still carries an older term.
//
// # Foreign values
//
// A child of an election's node that is not a valid lease znode gives an
// error matching backendkit.ErrInvalidRecord from Acquire and Get and is
// never taken over: more than one child, a child not named
// lease-<10 digits>, data over 64 KiB, not UTF-8, not a JSON record of the
// format above, unknown or trailing fields, another election's record, a
// duration outside (0, backendkit.MaxRecordDuration], a holder, identity
// or metadata Lease.Validate refuses, a stated term above the creation
// zxid. An ephemeral one goes away with its session; a persistent one
// stays until removed. Renew reports backendkit.ErrLeaseLost and Release
// does nothing for such a znode. So nothing a foreign writer puts in
// ZooKeeper reaches an elector, its metrics or a terminal unchecked.
//
// # Secrets
//
// Every error a Backend returns passes through backendkit.RedactError
// with the secrets given to New (the config module gives its digest user
// name, when at least 4 bytes long, and password). The module's errors
// never quote a setting's value.
//
// # Configuration
//
// The module fxelection.backends.zookeeper (ConfigModule) makes a
// connection of its own from these settings and closes it in Cleanup:
//
//   - servers (required, a list of host:port): the ensemble's client
//     addresses.
//   - session_timeout: the session timeout asked for (default 15s, between
//     1s and 10m), and Options.SessionTimeout: every renew_deadline using
//     the module must be shorter (see Sessions and leases).
//   - prefix: Options.Prefix (default "/fxelection").
//   - username, password (a secret): digest authentication, set together;
//     the znodes the Backend creates then get the ACL "auth" (all
//     permissions for the authenticated user only).
//   - push: child-watch wake-up (default true).
package zklease
