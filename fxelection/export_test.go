package fxelection

import "time"

// PutGarbage makes election's record unreadable for ttl (tests only).
func (m *MemoryBackend) PutGarbage(election string, ttl time.Duration) { m.putGarbage(election, ttl) }

// Forget drops election's record, keeping its term counter (tests only).
func (m *MemoryBackend) Forget(election string) { m.forget(election) }

// FirstRenewal and RenewSlots are the renewal timing the package doc
// states (doc tests only).
var FirstRenewal = firstRenewal

// RenewSlots is the number of batch-grid slots per RetryPeriod (doc tests
// only).
const RenewSlots = renewSlots
