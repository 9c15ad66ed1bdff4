// Package pool spreads many leases over the workers that share them: each
// worker runs a Pool over the same set of shards and holds about an equal
// share, each shard an election of its own with its own fencing term.
// Workers find each other through the store (a member record per worker,
// through the same fxelection Backend contract), so a pool works on every
// backend; shards move between workers with Elector.ResignTo, so a moved
// shard is never without an owner for longer than it takes the new owner
// to notice the hand-over. See Pool for the rules and what they cannot
// promise.
package pool
