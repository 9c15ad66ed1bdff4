package memory

import "time"

// PutGarbage makes election's record unreadable for ttl (tests only).
func (m *Backend) PutGarbage(election string, ttl time.Duration) { m.putGarbage(election, ttl) }

// Forget drops election's record, keeping its term counter (tests only).
func (m *Backend) Forget(election string) { m.forget(election) }
