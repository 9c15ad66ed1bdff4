package electiontesting

import (
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// Interval is one period during which an elector believed it led.
type Interval struct {
	Identity string
	Term     uint64
	Start    time.Time
	End      time.Time // zero while still leading
}

// Recorder records leadership intervals of many electors on one clock, to
// check that no two of them believed they led at the same instant. Attach
// it to each elector with AddObserver.
type Recorder struct {
	mu        sync.Mutex
	intervals []Interval
}

// Observe implements fxelection.Observer.
func (r *Recorder) Observe(ev fxelection.Event) {
	switch ev.Kind {
	case fxelection.EventStartedLeading:
		r.mu.Lock()
		r.intervals = append(r.intervals, Interval{Identity: ev.Identity, Term: ev.Lease.Term, Start: time.Now()})
		r.mu.Unlock()
	case fxelection.EventStoppedLeading:
		now := time.Now()
		r.mu.Lock()
		for i := len(r.intervals) - 1; i >= 0; i-- {
			if r.intervals[i].Identity == ev.Identity && r.intervals[i].End.IsZero() {
				r.intervals[i].End = now
				break
			}
		}
		r.mu.Unlock()
	}
}

// Intervals returns what was recorded, in start order.
func (r *Recorder) Intervals() []Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Interval(nil), r.intervals...)
}

// Overlap returns two intervals that overlap in time, if any. An open
// interval (still leading) extends to now.
func (r *Recorder) Overlap() (a, b Interval, found bool) {
	iv := r.Intervals()
	now := time.Now()
	end := func(x Interval) time.Time {
		if x.End.IsZero() {
			return now
		}
		return x.End
	}
	for i := range iv {
		for j := i + 1; j < len(iv); j++ {
			if iv[i].Start.Before(end(iv[j])) && iv[j].Start.Before(end(iv[i])) {
				return iv[i], iv[j], true
			}
		}
	}
	return Interval{}, Interval{}, false
}

// Check fails t if two electors believed they led at once, or if the terms
// of successive leaderships did not rise.
func (r *Recorder) Check(t testing.TB) {
	t.Helper()
	if a, b, found := r.Overlap(); found {
		t.Fatalf("two electors believed they led at once: %+v and %+v", a, b)
	}
	var last uint64
	for _, iv := range r.Intervals() {
		if iv.Term <= last {
			t.Fatalf("leadership terms not increasing: %+v", r.Intervals())
		}
		last = iv.Term
	}
}

// WaitOneLeader waits up to limit for exactly one of cs other than except
// to lead (isLeader), and returns it with the time it was seen; it fails t
// when two lead at once or none does in time.
func WaitOneLeader[T comparable](t testing.TB, cs []T, except T, isLeader func(T) bool, limit time.Duration) (T, time.Time) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var leaders []T
		for _, c := range cs {
			if c != except && isLeader(c) {
				leaders = append(leaders, c)
			}
		}
		if len(leaders) > 1 {
			t.Fatalf("%d candidates lead at once", len(leaders))
		}
		if len(leaders) == 1 {
			return leaders[0], time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader within %v", limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
