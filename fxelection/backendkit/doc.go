// Package backendkit is for authors of fxelection backends: the pieces every
// backend needs and none should write again. Application authors do not need
// it; they import package fxelection and a backend module.
//
//   - WakeHub: the bookkeeping behind push wake-up (backendkit.Notifier).
//   - Backoff and SleepContext: reconnect loops' waits, the same the elector
//     uses.
//   - ExpiryTracker: observed-time expiry for stores with compare-and-swap but
//     no TTL.
//   - MarshalRecord and UnmarshalRecord: the JSON lease record for stores that
//     keep one value per election (S3 objects, cache entries).
//   - DurationFromMillis and NextTerm: validated decoding of durations and
//     terms that never go backwards. Lease.Validate checks a whole decoded
//     lease.
//   - RedactText and RedactError: the one redaction path every error that
//     leaves a backend passes.
//
// A backend is only atomic storage operations: it has no timers, events,
// metrics or logging of its own. fxelection/electiontest has the conformance
// suite and the chaos kit every backend runs.
package backendkit
