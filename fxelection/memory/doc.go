// Package memory is the in-memory backend: leases live in this process's
// memory, so it coordinates the goroutines or components of one process
// only. It serves single-process applications, demos and unit tests, and
// it is the backend the conformance suite checks itself against.
//
//	backend := memory.New()
//	e, err := fxelection.New(fxelection.Config{Name: "billing"}, backend)
//
// Under fx, memory.Module provides a *memory.Backend as the graph's
// fxelection.Backend.
//
// Guarantees:
//
//   - Expiry: by this process's monotonic clock; every operation is atomic.
//   - Fencing terms: 1, 2, 3… per election, for the life of the Backend
//     value (a release or a deleted record keeps the counter).
//   - Push wake-up: a release wakes the election's other candidates and
//     watchers at once.
//   - Batched renewals: one lock for a whole batch.
//   - A crashed leader replaced within LeaseDuration + 1.2 × RetryPeriod
//     (the lease expires; a follower takes it at its next retry).
//
// What it cannot promise: anything across processes. Two processes with a
// memory.Backend each both lead.
package memory
