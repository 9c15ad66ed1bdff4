package backendkit

import "sync"

// HeldRecords implements the rule for a record deleted from outside, for
// backends whose store keeps a released record (marked released) and never
// deletes one itself: a record this backend last read held and now finds
// missing was deleted by someone else (an operator, a re-created table or
// namespace) while its holder may still believe it leads, until its next
// renewal finds the record gone or its RenewDeadline passes. So the absence
// is decided as that record (Absent): the holder's own identity takes it
// back at once with a new term, as after a release; any other candidate
// only once it has observed the absence for the record's full duration on
// its own monotonic clock (ExpiryTracker), by when the old holder has
// stopped believing. A candidate that never read the record held cannot
// know of it and creates the record at once: only the term fences the old
// holder then.
//
// The zero value is ready to use and safe for concurrent use.
type HeldRecords struct {
	mu   sync.Mutex
	held map[string]Value // by election: the record last read, while held
}

// Saw records that a read of election found v: it is remembered while
// held and forgotten once released.
func (h *HeldRecords) Saw(election string, v Value) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v.Released {
		delete(h.held, election)
		return
	}
	if h.held == nil {
		h.held = make(map[string]Value)
	}
	v.Lease = v.Lease.Clone()
	h.held[election] = v
}

// Forget drops what h remembers of election: call it once the backend's
// own write (an acquisition, hand-over or release) replaced the record.
func (h *HeldRecords) Forget(election string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, election)
}

// Vanished reports whether election's record was last read held, so that
// finding it missing now means a delete from outside: the backend then
// keeps its ExpiryTracker's observation of the absence rather than
// forgetting the election.
func (h *HeldRecords) Vanished(election string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.held[election]
	return ok
}

// Absent returns what Claim decides on when election's record is missing:
// the record last read held (released for identity, its holder) with
// exists true, and expired, which observes the absence with t for that
// record's duration; or exists false when no held record was read, and
// the record is free.
func (h *HeldRecords) Absent(t *ExpiryTracker, election, identity string) (cur Value, exists bool, expired func() bool) {
	h.mu.Lock()
	gone, ok := h.held[election]
	h.mu.Unlock()
	if !ok {
		return Value{}, false, nil
	}
	cur = Value{Lease: gone.Lease.Clone(), Released: gone.Lease.Holder == identity}
	// The absence is observed as a write of its own: no store version is
	// empty, and the vanished record's version and nonce name it.
	nonce := "vanished:" + gone.Lease.Version + "/" + gone.Write
	return cur, true, func() bool { return t.Expired(election, "", nonce, gone.Lease.Duration) }
}
