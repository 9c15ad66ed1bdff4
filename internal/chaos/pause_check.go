package chaos

import (
	"maps"
	"sort"
	"time"
)

// analyse checks the invariants of the pause workload on what the members
// reported and fills the report. It runs after every member exited.
func (p *pauseRun) analyse(t0 int64) *Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	tm := p.o.Timing
	r := &Report{
		Seed: p.o.Seed, Candidates: p.o.Candidates, Timing: tm, Slack: p.o.Slack,
		Faults: maps.Clone(p.counts),
	}
	pr := &PauseReport{Locks: p.locks, ByLength: maps.Clone(p.counts), Guard: "in-process", Kept: map[string]int{}, Replaced: map[string]int{}}
	if p.locks {
		pr.Keys = len(p.names)
	}
	if p.o.Fence != nil {
		pr.Guard = "store guard"
	}
	r.Pauses = pr
	r.Violations = append(r.Violations, p.violations...)
	violate := r.violate
	at := func(ns int64) time.Duration { return time.Duration(ns - t0).Round(time.Millisecond) }
	dur := func(ns int64) time.Duration { return time.Duration(ns).Round(time.Millisecond) }

	// Beliefs still open ended when the members were told to stop.
	perKey := make([][]*belief, len(p.names))
	for _, m := range p.members {
		pr.Pauses += len(m.pauses)
		for _, b := range m.beliefs {
			if b.end < 0 {
				b.end = p.stopAt
			}
			perKey[b.key] = append(perKey[b.key], b)
			pr.Leaderships++
		}
	}
	delete(pr.ByLength, pauseInFlight)
	for k, n := range pr.ByLength {
		r.Faults[k] = n
	}
	for _, n := range r.Faults {
		r.TotalFaults += n
	}
	r.TotalFaults -= r.Faults[pauseInFlight] // counted in its length too

	// pausedIn returns the last pause of m that overlaps [lo, hi].
	pausedIn := func(m *pmember, lo, hi int64) *pauseWin {
		var last *pauseWin
		for i := range m.pauses {
			if w := &m.pauses[i]; w.start <= hi && w.end >= lo {
				last = w
			}
		}
		return last
	}
	lease := int64(tm.LeaseDuration)
	var losses []time.Duration

	for k, bs := range perKey {
		sort.Slice(bs, func(i, j int) bool { return bs[i].start < bs[j].start })
		// 1. Terms: no two members share a term of a key, and a member
		// believes in a term lower than one believed before only if it
		// was paused up to a lease before (it acquired, then froze).
		byTerm := map[uint64]*belief{}
		var top *belief
		for _, b := range bs {
			if o, ok := byTerm[b.term]; ok && o.m != b.m {
				violate("%s: term %d believed by %s at %v and by %s at %v", p.names[k], b.term, o.m.identity, at(o.start), b.m.identity, at(b.start))
			}
			byTerm[b.term] = b
			if top != nil && top.m != b.m && b.term < top.term && pausedIn(b.m, b.start-lease, b.start) == nil {
				violate("%s: %s believed term %d at %v after %s believed term %d at %v", p.names[k], b.m.identity, b.term, at(b.start), top.m.identity, top.term, at(top.start))
			}
			if top == nil || b.term > top.term {
				top = b
			}
		}
		// 2. Two members believe at once only when the older holder (lower
		// term) was paused during its belief (or just before it): frozen,
		// or resumed and not yet aware of its loss.
		for i, a := range bs {
			for _, b := range bs[i+1:] {
				if b.start >= a.end {
					break
				}
				if a.m == b.m {
					continue
				}
				lo, hi := max(a.start, b.start), min(a.end, b.end)
				if lo >= hi {
					continue
				}
				old := a
				if b.term < a.term {
					old = b
				}
				if w := pausedIn(old.m, old.start-lease, hi); w != nil && w.start < old.end {
					pr.PauseOverlaps++
					pr.LongestAfterResume = max(pr.LongestAfterResume, time.Duration(hi-w.end))
					continue
				}
				r.Overlaps++
				violate("%s: %s (term %d) and %s (term %d) both believed from %v to %v, neither paused",
					p.names[k], a.m.identity, a.term, b.m.identity, b.term, at(lo), at(hi))
			}
		}
		// 3. A holder paused while holding whose lease another member took
		// stops believing within RenewDeadline (+ slack) of its SIGCONT.
		// Every pause of a leadership but its last was survived (the
		// holder believed on past it); the last was survived unless a
		// member with a higher term believed before the leadership ended.
		bound := int64(tm.RenewDeadline + p.o.Slack)
		for _, b := range bs {
			var in []*pauseWin
			for i := range b.m.pauses {
				if w := &b.m.pauses[i]; w.start > b.start && w.start < b.end {
					in = append(in, w)
				}
			}
			if len(in) == 0 {
				continue
			}
			sort.Slice(in, func(i, j int) bool { return in[i].start < in[j].start })
			for _, w := range in[:len(in)-1] {
				pr.Kept[w.kind]++
			}
			w := in[len(in)-1]
			replaced := false
			for _, o := range bs {
				if o.m != b.m && o.term > b.term && o.start < b.end {
					replaced = true
					break
				}
			}
			if !replaced {
				pr.Kept[w.kind]++
				continue
			}
			pr.Replaced[w.kind]++
			d := max(b.end-w.end, 0)
			losses = append(losses, time.Duration(d))
			if d > bound {
				violate("%s: %s (term %d), paused %v…%v and replaced, believed until %v: %v after SIGCONT, want within renew deadline %v + slack %v",
					p.names[k], b.m.identity, b.term, at(w.start), at(w.end), at(b.end), dur(d), tm.RenewDeadline, p.o.Slack)
			}
		}
	}
	pr.LossAfterResume = statsOf(losses)

	// 4. Pauses while holding, and of a write in flight.
	for _, m := range p.members {
		for _, w := range m.pauses {
			for _, b := range m.beliefs {
				if b.start < w.start && b.end > w.start {
					pr.WhileHolding++
					break
				}
			}
		}
	}
	inFlight := map[*pauseWin]bool{}

	// 5. The fence, in the order writes arrived: every late write is refused
	// once a newer term wrote; no live write is refused; no write with a
	// term lower than one accepted before is accepted.
	highest := make([]uint64, len(p.names))
	for _, w := range p.writes {
		var b *belief
		for _, o := range w.m.beliefs {
			if o.key == w.key && o.term == w.term && o.start <= w.sent {
				b = o
			}
		}
		if pw := pausedIn(w.m, w.begin, w.sent); pw != nil && pw.start >= w.begin {
			w.inFlight = true
			inFlight[pw] = true
		}
		// Late: frozen in flight; or arrived at the fence after its writer
		// stopped believing; or arrived after another member took the
		// term over, its writer paused during its leadership (a writer
		// that was not paused and is replaced overlaps, which check 2
		// reports). A write is in flight until it reaches the fence.
		w.late = w.inFlight || b == nil || b.end < w.arrive
		if !w.late && pausedIn(w.m, b.start-lease, w.arrive) != nil {
			for _, o := range perKey[w.key] {
				if o.m != w.m && o.term > w.term && o.start <= w.arrive {
					w.late = true
					break
				}
			}
		}
		stale := w.term < highest[w.key]
		switch {
		case w.accepted && stale:
			r.StaleAccepted++
			violate("%s: the fence accepted term %d of %s at %v after term %d", p.names[w.key], w.term, w.m.identity, at(w.arrive), highest[w.key])
		case !w.accepted && !stale:
			violate("%s: the fence refused term %d of %s at %v, not lower than the highest accepted %d", p.names[w.key], w.term, w.m.identity, at(w.arrive), highest[w.key])
		case !w.accepted && w.late:
			pr.StaleRefused++
		case !w.accepted:
			pr.LiveRefused++
			violate("%s: the fence refused term %d of %s at %v while it led unpaused (highest %d)", p.names[w.key], w.term, w.m.identity, at(w.arrive), highest[w.key])
		case w.late:
			pr.LateAccepted++
		default:
			r.FencedAccepted++
		}
		if w.accepted {
			highest[w.key] = max(highest[w.key], w.term)
		}
	}
	pr.WriteInFlight = len(inFlight)
	return r
}
