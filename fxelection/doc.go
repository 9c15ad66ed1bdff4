// Package fxelection is distributed leader election for Go, delivered as
// uber-fx modules and usable without fx.
//
// An Elector campaigns for one election's lease on a Backend (Redis,
// Postgres, in-memory, or your own) and keeps it while it can. The
// application asks IsLeader, runs work with RunIfLeader (the work's context
// is cancelled the moment leadership ends), learns who leads with Leader —
// on followers too — and guards its writes with the lease's Term, a fencing
// token that strictly increases on every change of holder.
//
// Timing follows client-go's discipline: the leader renews every
// RetryPeriod and stops believing it leads once no renewal has succeeded
// within RenewDeadline of the start of the last successful one, measured on
// the local monotonic clock. Because RenewDeadline < LeaseDuration, the
// leader steps down before its lease can expire in the store and another
// candidate take over. No two clocks are ever compared.
//
// The first renewal after an acquisition comes at a random point of the
// first retry period, so elections started together do not renew in
// lockstep. Stop returns within its deadline (ctx or StopTimeout) plus at
// most one RetryPeriod for the release, even when a backend call ignores its
// context; a call still running is left to finish on its own and named in
// the returned error.
//
// Nothing a store or an application hook does can crash the elector: every
// decoded record is checked (Lease.Validate) and terms never wrap
// (ErrTermExhausted); a panicking Observer or callback is recovered and
// reported as a *PanicError (to OnError) and an EventPanic (to observers);
// every store failure is redacted (backendkit.RedactError) before any
// callback, observer, log line or Status sees it.
//
// The core owns all timing, events and metrics hooks; a Backend is only four
// atomic storage operations, proven by the conformance suite in package
// electiontest. Backends are also modules of package fxelection/config
// (IDs such as fxelection.backends.redis, registered when their package is
// imported), so a configuration document can name a backend and its typed
// settings; config.Load turns a document into the fx options of every
// election it lists. Module wires an Elector into an fx app: campaigning
// starts with the app and the lease is released when it stops.
//
// What no lease-based election can promise: a process paused for longer
// than LeaseDuration−RenewDeadline right after a renewal may act once more
// after another took over. Fence external writes with Lease.Term.
package fxelection
