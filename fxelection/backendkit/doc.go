// Package backendkit is for authors of fxelection backends: the pieces every
// backend needs and none should write again. Application authors import
// package fxelection and a backend module; they need this one only to call
// a Backend themselves (Get, and ErrNoLease when nobody leads, as
// example-app's status command does) or to redact text the way the
// library does (RedactText). Event.StoreFailure classifies an operation's
// error without it.
//
//   - WakeHub: the bookkeeping behind push wake-up (Notifier).
//   - Backoff and SleepContext: reconnect loops' waits, the same the elector
//     uses.
//   - ExpiryTracker: observed-time expiry for stores with compare-and-swap but
//     no TTL.
//   - MarshalRecord and UnmarshalRecord: the JSON lease record for stores that
//     keep one value per election (S3 objects, cache entries).
//   - DurationFromMillis and NextTerm: validated decoding of durations and
//     terms that never go backwards. Lease.Validate checks a whole decoded
//     lease.
//   - Redacting (with Ops and RedactingBatches): the one path by which
//     errors leave a backend, redacted with its credentials (Credentials)
//     by RedactError; RedactText for other text.
//   - Package caslease (fxelection/backendkit/caslease): the whole lease
//     algorithm for a store with a compare-and-swap register (memcached,
//     NATS KV, S3, DynamoDB, Kubernetes): a store implements its Register
//     (or ByteStore, for a store of bytes) and gets a Backend.
//
// It also holds the contract itself: Backend, Lease, AcquireRequest and
// HeldError, the optional Notifier, BatchRenewer, BatchAcquirer,
// BatchProber, AcquireBatchProber, Transferer (with Transfer for
// wrappers), RenewDeadlineLimiter (with RenewDeadlineProblem) and
// NamedBackend, the errors (ErrLeaseHeld, ErrLeaseLost, ErrNoLease,
// ErrInvalidRecord, ErrTermExhausted) and the limits on what a record may
// hold (MaxTerm, MaxRecordDuration, MaxNameLen, …).
//
// A backend is atomic storage operations plus, at most, what a push
// wake-up needs: it emits no events or metrics and does not log the errors
// it returns (the Elector owns timing, events and metrics). The backends
// here keep to that with a few exceptions their package docs state: five
// (Redis, Postgres, etcd, and through caslease NATS KV and Kubernetes) run
// a push listener on a goroutine of their own, Postgres and Kubernetes log
// their listener's connection problems or refusals, Azure Blob
// waits on a timer for a record to settle, and memcached runs each client
// call on a goroutine of its own to honour contexts.
//
// # Writing a backend
//
// A store that has a compare-and-swap register (one value per key, read
// with its version, created if absent, replaced only if unchanged) needs
// no lease algorithm of its own: write an adapter of caslease.Register
// (Get, Add, CompareAndSwap, Capabilities; optionally Watcher for push),
// or of caslease.ByteStore wrapped with caslease.Bytes for a store of
// bytes, and pass it to caslease.New (NewNotifying with a Watcher). The
// adapter maps the store's errors onto caslease's sentinels and holds no
// term, expiry, retry or redaction logic; caslease's package
// documentation states the contract.
//
// Any other store implements Backend (optionally Notifier, with WakeHub
// for the bookkeeping, BatchRenewer, BatchAcquirer and Transferer). Keep
// the term rule in one place: AcquireRequest.Continues decides when an
// Acquire keeps the live record's term, and Claim applies it for stores
// that keep one value per election. Decode every record with
// UnmarshalRecord or check it with Lease.Validate, hand out terms with
// NextTerm, and embed Redacting built from your operations and your
// client's secrets (so no operation redacts on its own).
//
// Either way, run electiontest.RunBackendTests (the conformance suite,
// including a linearizability check of concurrent histories) and
// electiontest.RunChaos (the fault schedule every backend here runs on its
// real server) against your store, add a go test -fuzz target for your
// decoder, and give the package a typed configuration module (registered
// with package fxelection/modkit) whose Validate is your Options.Validate.
package backendkit
