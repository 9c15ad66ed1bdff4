// Package memcachedlease is the memcached adapter of fxelection's cache
// backend (package cachelease), on github.com/bradfitz/gomemcache: add for
// add-if-absent, gets and cas for compare-and-swap, and the server's own
// expiry.
//
// # TTLs are whole seconds
//
// memcached expires items in whole seconds by a clock that ticks once a
// second, so an item stored with expiration n can vanish after as little as
// n−1 seconds. A lease of duration d is therefore stored with expiration
// ceil(d/1s)+1 seconds (Expiration): the key lives at least d and at most
// about 2 s longer. A follower takes over a dead leader's lease up to 2 s
// later than the duration says; a 500 ms lease is kept 2 s. Durations above
// MaxLease (30 days less a second) cannot be expressed as a relative
// expiration and are refused with cachelease.ErrTTLRange. The core's rule
// that a leader stops believing at its RenewDeadline (before LeaseDuration)
// is unaffected: rounding only ever lengthens the lease.
//
// # Eviction
//
// memcached evicts items under memory pressure (least recently used first,
// per slab class). If it evicts a live lease, the election is free at once:
// the leader's next renewal (a cas) fails with fxelection.ErrLeaseLost and
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
// # Timeouts
//
// gomemcache has no context support: each call is bounded by the client's
// Timeout (ConfigModule's default is 1 s), not by ctx. A ctx that is already
// done is honoured before every call. The elector's Stop and step-down
// bounds do not depend on the backend honouring ctx.
//
// # Several servers
//
// A client with several servers shards keys across them; each election's
// key lives on one server, so its lease is as available as that server.
// memcached does not replicate.
package memcachedlease
