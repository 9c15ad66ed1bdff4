// Package memcachedlease is the memcached adapter of fxelection's cache
// backend (package cachelease), on github.com/bradfitz/gomemcache: add for
// add-if-absent, gets and cas for compare-and-swap, and the server's own
// expiry.
//
//	servers, err := memcachedlease.NewServerSet(addrs...)
//	b, err := memcachedlease.New(memcache.NewFromSelector(servers), cachelease.Options{}) // or memcachedlease.Module in fx
//
// # Summary
//
//   - Expiry: server-authoritative, by memcached's TTL in whole seconds: a
//     lease is stored for ceil(LeaseDuration)+1 s (see TTLs are whole
//     seconds). No client clock is compared with another's.
//   - Fencing term: clock-seeded, the larger of the last term in the store
//     plus one and the acquiring candidate's clock in microseconds; a
//     released lease keeps its term (see package cachelease).
//   - Push wake-up: none (memcached has no change notifications):
//     followers learn of a release at their next retry, within
//     1.2 × RetryPeriod.
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): the caller's lease ended and the successor's
//     record written in one cas, with a new term above the ended one and
//     the successor's TTL, so no other candidate can take the lease in
//     between; without push, the successor takes it at its next retry.
//   - Failover: the key of a crashed leader lives at least LeaseDuration
//     and less than LeaseDuration + 2s after its last renewal's write, and a
//     follower takes it at its next retry: within LeaseDuration + 2s +
//     1.2 × RetryPeriod of that write, plus a round trip.
//   - Goroutines: each gomemcache call runs on a goroutine of its own, so
//     that the Backend returns at its context's end (see Timeouts and
//     contexts).
//   - What it cannot promise: memcached keeps nothing on disk and evicts
//     under memory pressure, so a restart, flush_all, a deleted key or an
//     eviction frees the election at once and two candidates may briefly
//     both lead (see Eviction); it does not replicate (a key lives on one
//     server); and every candidate must use the same set of servers (see
//     Several servers).
//
// # TTLs are whole seconds
//
// memcached expires items in whole seconds by a clock that ticks once a
// second, so an item stored with expiration n can vanish after as little as
// n−1 seconds. A lease of duration d is therefore stored with expiration
// ceil(d/1s)+1 seconds (Expiration): the key lives at least d and less
// than d + 2s. A follower takes over a dead leader's lease up to 2s later
// than the duration says; a 500ms lease is stored with expiration 2 and
// kept 1 to 2 s. Durations above
// MaxLease (30 days less a second) cannot be expressed as a relative
// expiration and are refused with cachelease.ErrTTLRange. The core's rule
// that a leader stops believing at its RenewDeadline (before LeaseDuration)
// is unaffected: rounding only ever lengthens the lease.
//
// # Eviction
//
// memcached evicts items under memory pressure (least recently used first,
// per slab class). If it evicts a live lease, the election is free at once:
// the leader's next renewal (a cas) fails with backendkit.ErrLeaseLost and
// it steps down, while another candidate may already have acquired it with a
// higher term; for up to one RetryPeriod two candidates may believe they
// lead, so guard writes with the term. A renewed lease is written every
// RetryPeriod, which keeps it at the young end of the LRU, so eviction takes
// a cache churning through its whole memory within a RetryPeriod. Evicting a
// released marker only loses the last term; the next term is clock-seeded
// and still higher. Run the election on a memcached whose memory is not
// exhausted (or a dedicated one, possibly with -M so that it refuses writes
// instead of evicting) if a brief double leadership is unacceptable.
//
// A restarted memcached is empty: every lease is lost as above, and terms
// stay clock-seeded.
//
// # Versions
//
// memcached's add and cas do not return the item's new CAS id, so after
// every write the adapter reads it back with gets. Its values are unique
// (each carries a per-write nonce), so bytes read back equal to those
// written are that write, and the CAS id returned is exactly the version it
// produced. What cannot be promised: between the write and the read-back
// another write may land (a takeover, an operator's delete, an eviction, a
// flush), or the read may fail. The write was then made, and others may have
// seen it, but its version is unknown: the Store reports
// cachelease.ErrVersionUnknown, and Acquire and Renew report a store error
// (the outcome unknown; the elector retries and then learns the state from
// the store), never "nothing written" (a second write in the same Acquire,
// a HeldError, or ErrLeaseLost from Renew, as before).
//
// # Timeouts and contexts
//
// gomemcache has no context support: each call is bounded by the client's
// Timeout (ConfigModule's default is 1s). The adapter nevertheless returns
// at ctx.Done: every gomemcache call runs on a goroutine of its own that
// the caller waits for only until ctx is done; an abandoned call goes on
// until it completes or the client's Timeout (a socket deadline, with the
// dial bounded by it too) ends it, and its result is dropped. A write
// abandoned this way may still be applied: the caller reports ctx's error,
// an unknown outcome. So a renewal never holds a leader past its
// RenewDeadline's context, whatever the Timeout; keep the Timeout short
// anyway, since abandoned calls hold a connection until it ends.
//
// # Several servers
//
// A client with several servers shards keys across them; each election's
// key lives on one server, so its lease is as available as that server.
// memcached does not replicate.
//
// Every candidate of an election must address the same server for it:
// give every candidate the same SET of servers, spelled the same way
// (a host name on one candidate and its IP address on another are two
// servers), and shard with a ServerSet (ConfigModule does; with Module or
// New, build the client with memcache.NewFromSelector and NewServerSet).
// A ServerSet depends on the set only, not on the order or repetitions of
// the list. memcache.New's ServerList picks a server by position: two
// candidates listing the same servers in another order then store the same
// election on different servers and both lead.
//
// Adding or removing a server moves the elections whose keys hash to it
// (about 1/n of them with a ServerSet). During a rolling change, while some
// candidates have the old set and others the new one, a moved election has
// two records on two servers: a candidate with the old set and one with
// the new set can both lead it, each with its own term, for as long as the
// sets differ. Their terms are clock-seeded, but a fencing guard that has
// seen the later-acquired term refuses only the other one's writes, not
// its belief that it leads. To change the set without double leadership,
// stop every candidate of the affected elections (or all of them) before
// starting any with the new set, or change the set only where brief double
// leadership is acceptable. A removed server's records simply stop being
// read; a server added back later may still hold an old record until it
// expires (a lease's TTL) or is released.
//
// Host names are resolved by the client each time it opens a connection,
// not once at start (ConfigModule does no DNS in Provision); the shard
// depends on the name as configured, never on the address it resolved to.
// Pooled connections keep the address they were opened with until they
// break.
//
// # Configuration
//
// The module fxelection.backends.memcached (ConfigModule) builds a client
// of its own, sharded by a ServerSet, from these settings:
//
//   - addr (required): the servers' host:port, comma-separated, not a
//     URL; every candidate must list the same set.
//   - timeout: the socket timeout of each call (default 1s, also for
//     "0s").
//   - prefix: cachelease.Options.KeyPrefix (default "fxelection.";
//     A-Z a-z 0-9 . _ = -).
package memcachedlease
