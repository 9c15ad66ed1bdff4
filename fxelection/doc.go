// Package fxelection is distributed leader election for Go, delivered as
// uber-fx modules and usable without fx.
//
// One candidate of each election leads at a time. Give it work to do while it
// leads, and guard that work's writes with the lease's fencing term:
//
//	backend := memory.New() // or redislease.New(client, …), pglease.New(pool, …), …
//	e, err := fxelection.New(fxelection.Config{
//		Name: "nightly-report",
//		Callbacks: fxelection.Callbacks{
//			OnStartedLeading: func(ctx context.Context) {
//				lease, _ := fxelection.LeaseFromContext(ctx)
//				report(ctx, lease.Term) // ctx is cancelled the moment leadership ends
//			},
//		},
//	}, backend)
//	if err != nil {
//		return err
//	}
//	if err := e.Start(ctx); err != nil { // campaigns in the background
//		return err
//	}
//	defer e.Stop(context.Background()) // releases the lease: another candidate leads at once
//
// Under fx, a backend module provides the Backend and Module the Elector,
// which campaigns from the app's start and releases the lease when it stops:
//
//	fx.New(
//		fx.Provide(newRedisClient), // the app owns its client
//		redislease.Module,
//		fx.Supply(fxelection.Config{Name: "nightly-report"}),
//		fxelection.Module,
//		fx.Invoke(func(e *fxelection.Elector) { … }),
//	)
//
// An Elector campaigns for one election's lease on a Backend and keeps it
// while it can. The application asks IsLeader, runs work with RunIfLeader or
// Callbacks.OnStartedLeading (the work's context is cancelled the moment
// leadership ends), learns who leads with Leader — on followers too — and
// guards its writes with the lease's Term, a fencing token that strictly
// increases on every change of holder. A watch.Watcher follows the leader
// without campaigning.
//
// A process that runs many elections on one store makes a Group and creates
// its electors with Group.New: they renew in batches (one round trip for
// many leases, on backends that can) and share a few goroutines to start.
// An elector made with New is on its own.
//
// # Guarantees
//
// Timing follows client-go's discipline, on the local monotonic clock; no
// two clocks are ever compared:
//
//   - Renewals: the first after an acquisition comes at a random point of
//     [RetryPeriod/2, RetryPeriod) from its start, so elections started
//     together do not renew in lockstep. After each successful renewal the
//     next is due RetryPeriod after that one's start (on a BatchRenewer,
//     rounded down to a grid of RetryPeriod/64, so up to one slot earlier).
//     A failed renewal is retried sooner: the n-th failure in a row waits
//     min(RetryPeriod, jitter(RetryPeriod/4 × 2^(n−1))), jitter adding up
//     to 20%, until a renewal succeeds or the renew deadline passes.
//   - Step-down: once no renewal has succeeded within RenewDeadline of the
//     start of the last successful one, the leader stops believing it
//     leads: a timer, not the campaign loop, cancels the leader context, so
//     a backend call that ignores its context cannot stretch the belief.
//     The lease in the store cannot expire before that start plus
//     LeaseDuration, so the leader stops believing LeaseDuration −
//     RenewDeadline before another candidate can take over; that margin
//     absorbs clock-rate drift and scheduling delays. A store that also
//     ends a lease when its holder's session expires (ZooKeeper, a
//     backendkit.RenewDeadlineLimiter) can end it as early as the session
//     timeout after that start: there the margin is the smaller of the
//     two, session timeout − RenewDeadline, and New refuses a
//     RenewDeadline that is not shorter than the session timeout the
//     backend states.
//   - Followers try again RetryPeriod to JitterFactor × RetryPeriod after
//     an attempt that found the lease held; after store failures they back
//     off exponentially (doubling from RetryPeriod, jittered, capped at
//     MaxBackoff, reset on success).
//   - Failover depends on the store's expiry model. Where the store
//     expires the lease by its own clock (Redis, Postgres, Azure Blob,
//     memcached, etcd, the in-memory backend), a follower takes over a
//     crashed leader's lease at its first retry after the lease expired:
//     within LeaseDuration + 1.2 × RetryPeriod of the last renewal, plus a
//     round trip and the store's own rounding (whole seconds on Azure Blob
//     and etcd, up to 2 s more on memcached). Where expiry is observed
//     time (S3, NATS KV), a follower waits LeaseDuration from the first
//     poll that saw the last write unchanged: up to LeaseDuration + 2.4 ×
//     RetryPeriod after the last renewal. Each backend's package doc states
//     its bound. A graceful Stop or Resign releases the lease: candidates
//     woken by push (Redis, Postgres, NATS KV, etcd, in-memory) take it
//     within milliseconds, others at their next retry.
//   - Stop returns within its deadline (ctx's or StopTimeout, whichever is
//     earlier) plus at most one RetryPeriod and a few tens of milliseconds,
//     even when a backend call ignores its context; a call still running is
//     left to finish on its own and named in the returned error, and a
//     lease it could not release expires after LeaseDuration.
//   - Callbacks: OnStoppedLeading comes once after every OnStartedLeading,
//     after it has returned (one that ignores its cancelled context is
//     waited for at most StopTimeout); callbacks never run on the renewal
//     goroutine (see Callbacks).
//
// Nothing a store or an application hook does can crash the elector: every
// decoded record is checked (Lease.Validate) and terms never wrap
// (backendkit.ErrTermExhausted); a panicking Observer or callback is recovered and
// reported as a *PanicError (to OnError) and an EventPanic (to observers);
// every store failure is redacted (backendkit.RedactError) before any
// callback, observer, log line or Status sees it.
//
// A term names one leadership of one incarnation: every Elector sends a
// random incarnation token with each Acquire (AcquireRequest.Incarnation),
// new for every New and after every leadership it announced has ended. A
// backend keeps the term only for a retry by the same incarnation; the same
// identity from another incarnation (a restarted process with a fixed
// Identity) takes its lease at once, but with a strictly higher term, so a
// paused predecessor and its successor never write with one term.
//
// What no lease-based election can promise: a process paused for longer
// than LeaseDuration−RenewDeadline right after a renewal may act once more
// after another took over. Fence external writes with Lease.Term.
//
// # Many elections
//
// One process can run thousands of elections (one per shard, tenant or
// job) on one backend: make a Group for it and create every elector with
// Group.New. A leader waiting for its next renewal holds no goroutine; the
// callback dispatcher holds none while idle; push costs no goroutine per
// elector (one listener per backend value); a follower waits on a goroutine
// of its own between attempts. The electors of a Group whose backend
// implements backendkit.BatchRenewer (Redis, Postgres, the in-memory
// backend) renew in batches of up to backendkit.MaxRenewBatch (1024) leases
// per round trip; in a batch where one lease was lost, that one gets
// ErrLeaseLost and the others are renewed, and each elector still stops
// waiting at its renew deadline or at Stop's deadline (Stop lets a renewal
// in flight finish until then). Electors made with New renew lease by
// lease. Elections from a configuration document share one Group
// per backend module; on a module whose backend cannot batch they renew
// lease by lease (backendkit.BatchProber).
//
// Where the backend implements backendkit.BatchAcquirer too (Redis,
// Postgres, the in-memory backend), the Group's campaign attempts, followers' polls
// included, go in batches of up to backendkit.MaxAcquireBatch, and
// renewals go first: at most two batches of acquisitions are in flight at
// once beside the renewals, and a free sender takes renewals first while a
// full batch of them waits. A Group sends at most four batches at once
// whatever the load, so a slow store sees fewer, larger requests rather
// than a growing pile. Starting many electors costs one batched attempt
// each. A leadership that ended by the renew deadline (most often
// overload: renewals that did not finish in time) campaigns again only
// after a wait of RetryPeriod, doubling with each such loss in a row up to
// LeaseDuration−RenewDeadline, drawn from the upper half of that; a push
// wake-up cuts it short. Figures, overload and recovery included:
// BENCHMARKS.md in the repository.
//
// # Choosing the leader
//
// ResignTo hands the lease to a named candidate through a hint record held
// by its identity, which it takes at its next attempt with a higher term;
// one that never comes leaves the hint to expire after LeaseDuration.
// Config.Candidacy.Priority orders candidates: a lower one waits PriorityGrace
// before taking a free lease while a higher one was seen, and with
// Config.Candidacy.Preempt a higher one asks the leader to hand over once it has led
// MinTenure. Config.Candidacy.Defer keeps a candidate from taking a free lease at
// all (it takes only what is handed to it). ResignTo's doc says what a
// hand-over cannot promise; package fxelection/pool spreads many
// elections over workers with these pieces.
//
// # Packages
//
// The core owns all timing, events and metrics hooks; a Backend is only four
// atomic storage operations. Import paths below are relative to
// github.com/fxelection/fxelection; who uses each:
//
//   - fxelection (this package): every application. Elector, Config, Group,
//     events and the fx modules (fx.go).
//   - fxelection/memory: the in-memory backend (one process; tests, demos).
//   - fxelection/watch: following the leader without campaigning.
//   - fxelection/pool: many leases (shards) spread over the workers that
//     share them, each worker holding about an equal share.
//   - modules/redis (redislease), modules/postgres (pglease), modules/s3
//     (s3lease), modules/blob (bloblease), modules/cache (cachelease) with
//     modules/cache/memcached (memcachedlease) and modules/cache/nats
//     (natslease), and modules/etcd (etcdlease, a Go module of its own):
//     applications, one backend each, with its fx module and its
//     configuration module.
//   - modules/redis/redisfence and modules/postgres/pgfence: applications
//     whose leader writes to Redis or PostgreSQL, to refuse a deposed
//     leader's writes by fencing term.
//   - fxelection/fence: authors of fencing guards for other stores; the
//     token and errors every guard shares.
//   - fxelection/config: applications configured from a file; turns a
//     configuration document naming elections and backend modules into fx
//     options (config.Load). Authors of third-party backend modules too.
//   - metrics: applications exporting Prometheus metrics and serving health
//     checks (liveness, readiness, leader-only) for their electors.
//   - fxelection/schedule: applications running scheduled jobs only on the
//     leader; fxelection/schedule/fxgocron does it for gocron v2, with or
//     without fx.
//   - fxelection/backendkit: backend authors; the Backend contract (Lease,
//     AcquireRequest, HeldError, Notifier, BatchRenewer, Transferer, the errors and
//     limits), redaction, record encoding, observed-time expiry, push wake-up
//     and backoff helpers.
//   - fxelection/electiontest: backend authors and tests; the conformance
//     suite every backend runs, chaos runs, event recorders and fault
//     injection. fxelection/electiontest/faultinject is the fault-injecting
//     backend wrapper on its own, without package testing, for programs
//     (demos, drills).
package fxelection
