package chaos

import (
	"fmt"
	"sort"
	"time"
)

// analyse checks the invariants on what was recorded and fills the report.
// It runs after every elector stopped.
func (c *chaos) analyse() *Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := c.o.Timing
	r := c.report()
	r.FencedAccepted, r.StaleAccepted = c.fenced.accepted, c.fenced.staleAccepted
	r.ElectionReport = &ElectionReport{
		Electors: len(c.all), FailoverBound: c.o.FailoverBound, ConvergenceBound: c.o.ConvergenceBound,
		FinalConvergence: c.finalConv, StopErrors: c.stopErrors, StopErrorSamples: c.stopErrSamples,
		StaleRejected: c.fenced.staleRejected,
	}
	violate := r.violate
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

	var ivs []sampled
	for _, inst := range c.all {
		for _, s := range inst.samples {
			if s.end == 0 { // still open: cannot happen after every Stop
				s.end = s.last
			}
			ivs = append(ivs, s)
		}
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].first < ivs[j].first })
	r.Leaderships = len(ivs)
	for i, iv := range ivs {
		if i == 0 || iv.term < r.FirstTerm {
			r.FirstTerm = iv.term
		}
		r.LastTerm = max(r.LastTerm, iv.term)
	}

	// Documented windows: a server that loses its leases on restart, from
	// the kill until RenewDeadline + slack after it is back.
	documented := c.documented

	// 1. No two electors believe they lead at the same instant.
	for i := range ivs {
		for j := i + 1; j < len(ivs); j++ {
			a, b := ivs[i], ivs[j]
			if b.first > a.last {
				break // sorted by first: no later one overlaps a
			}
			if a.inst == b.inst {
				continue
			}
			lo, hi := max(a.first, b.first), min(a.last, b.last)
			if lo > hi {
				continue
			}
			if documented(lo, hi) {
				r.DocumentedOverlaps++
				r.MaxDocumentedOverlap = max(r.MaxDocumentedOverlap, hi-lo)
				continue
			}
			r.Overlaps++
			violate("%s (term %d) and %s (term %d) both believed they led from %v to %v",
				a.inst.identity, a.term, b.inst.identity, b.term, ms(lo), ms(hi))
		}
	}
	for _, rej := range c.liveRejects {
		if documented(rej.at, rej.at) {
			continue
		}
		r.LiveRejected++
		violate("fenced write by %s with term %d rejected at %v while its leader context was live (highest %d)",
			rej.inst.identity, rej.term, ms(rej.at), rej.highest)
	}

	// 2. Terms never decrease, and never repeat across incarnations: two
	// leaderships of different elector instances (a slot restarted under
	// the same identity is a new instance) never share a term, and one
	// instance repeats a term only while its leadership continues. In the
	// samples a continued leadership may show as several intervals (the
	// sampler saw it not believed for an instant); every observer start
	// event is a leadership of its own, after which the elector campaigns
	// as a new incarnation, so no two of them share a term.
	checkTerms := func(src string, seq []sampled, announced bool) {
		for i := 1; i < len(seq); i++ {
			a, b := seq[i-1], seq[i]
			repeat := b.term == a.term && (announced || b.inst != a.inst)
			if b.term < a.term || repeat {
				if documented(b.first, b.first) && b.term > 0 && b.term != a.term {
					continue
				}
				violate("%s: term %d for %s (instance %d) at %v after term %d for %s (instance %d)",
					src, b.term, b.inst.identity, b.inst.id, ms(b.first), a.term, a.inst.identity, a.inst.id)
			}
		}
	}
	checkTerms("samples", ivs, false)
	var evIvs []sampled
	for _, inst := range c.all {
		for _, e := range inst.evs {
			if e.kind == "start" {
				evIvs = append(evIvs, sampled{inst: inst, term: e.term, first: e.at})
			}
		}
	}
	sort.Slice(evIvs, func(i, j int) bool { return evIvs[i].first < evIvs[j].first })
	checkTerms("events", evIvs, true)

	// 3. Callbacks and events come in pairs and in order.
	for _, inst := range c.all {
		c.checkPairs(inst, violate)
		r.Callbacks += countKind(inst.cbs, "start")
	}

	// When did inst stop believing in the leadership that covered t?
	coverEnd := func(inst *instance, t time.Duration) (sampled, bool) {
		for _, s := range inst.samples {
			if s.first <= t && t <= s.end {
				return s, true
			}
		}
		return sampled{}, false
	}
	ctxEnd := func(inst *instance, term uint64, after time.Duration) (time.Duration, bool) {
		for _, cb := range inst.cbs {
			if cb.kind == "ctx-end" && cb.term == term && cb.at >= after {
				return cb.at, true
			}
		}
		return 0, false
	}

	// 4. A leader cut off for longer than RenewDeadline steps down within
	// it (+ slack): IsLeader and the leader context.
	var stepDowns, ctxEnds []time.Duration
	stepBound := tm.RenewDeadline + c.o.Slack
	for _, f := range c.faults {
		switch f.kind {
		case faultPartitionMid, faultPartitionLong, faultRefuse, faultServerKill, faultOutage:
		default:
			continue
		}
		if f.end >= 0 && f.end-f.start < stepBound {
			continue // healed before the bound: it may legitimately lead on
		}
		s, ok := coverEnd(f.inst, f.start)
		if !ok {
			continue // not leading when cut off
		}
		d := s.end - f.start
		stepDowns = append(stepDowns, d)
		if d > stepBound {
			violate("%s cut off (%s) at %v still believed it led %v later, want within renew deadline %v + slack %v",
				f.inst.identity, f.kind, ms(f.start), ms(d), tm.RenewDeadline, c.o.Slack)
		}
		if at, ok := ctxEnd(f.inst, s.term, s.first-c.o.Slack); ok {
			d := at - f.start
			ctxEnds = append(ctxEnds, d)
			if d > stepBound {
				violate("%s cut off (%s) at %v: leader context ended %v later, want within renew deadline %v + slack %v",
					f.inst.identity, f.kind, ms(f.start), ms(d), tm.RenewDeadline, c.o.Slack)
			}
		}
	}
	r.StepDown, r.LeaderContextEnd = statsOf(stepDowns), statsOf(ctxEnds)

	// next returns when an elector other than inst first led after t.
	next := func(inst *instance, t time.Duration) (time.Duration, bool) {
		for _, s := range ivs {
			if s.inst != inst && s.first >= t {
				return s.first, true
			}
		}
		return 0, false
	}

	// 5. Crash failover within FailoverBound (+ slack), when another
	// elector could take over.
	var failovers, failoversAll []time.Duration
	failBound := c.o.FailoverBound + c.o.Slack
	for _, cr := range c.crashes {
		at, ok := next(cr.inst, cr.at)
		until := cr.at + failBound
		if ok {
			failoversAll = append(failoversAll, at-cr.at)
			until = min(until, at)
		}
		if !c.couldTakeOver(cr, until) {
			continue
		}
		if ok {
			failovers = append(failovers, at-cr.at)
		}
		if !ok || at-cr.at > failBound {
			got := "never"
			if ok {
				got = ms(at - cr.at).String()
			}
			violate("leader %s crashed at %v; next leader after %s, want within %v + slack %v", cr.inst.identity, ms(cr.at), got, c.o.FailoverBound, c.o.Slack)
		}
	}
	r.Failover, r.FailoverAll = statsOf(failovers), statsOf(failoversAll)

	// 6. A crashed leader's lease is not taken by another identity before
	// it can have expired: at its last sample that said it led, its last
	// successful renewal had started less than RenewDeadline before, and
	// the store keeps the lease a full LeaseDuration from that start. (The
	// crashed elector stopped at once, so the overlap check cannot see
	// this; a paused process that resumed would.) A restart under the same
	// identity re-acquires at once, by design.
	for _, cr := range c.crashes {
		believed, ok := lastBelief(cr.inst, cr.at)
		if !ok {
			continue
		}
		earliest := believed + tm.LeaseDuration - tm.RenewDeadline
		for _, s := range ivs {
			if s.first < cr.at || s.inst == cr.inst || s.inst.identity == cr.inst.identity {
				continue
			}
			if s.first < earliest && c.successorFreed(cr, s.first) {
				r.EarlyTakeoverExempt++
				break
			}
			r.EarlyTakeoverChecked++
			if s.first < earliest && !documented(s.first, s.first) {
				violate("leader %s (last seen leading at %v) crashed at %v; %s led from %v, before its lease could expire (not before %v); faults on %s: %s; on %s: %s",
					cr.inst.identity, ms(believed), ms(cr.at), s.inst.identity, ms(s.first), ms(earliest),
					cr.inst.identity, c.history(cr.inst, cr.at, cr.inst.cbs), s.inst.identity, c.history(s.inst, s.first, s.inst.cbs))
			}
			break
		}
	}

	var handovers []time.Duration
	for _, h := range c.handovers {
		if at, ok := next(h.inst, h.at); ok {
			handovers = append(handovers, at-h.at)
		}
	}
	r.HandOver = statsOf(handovers)

	// Convergence after outages and server restarts: the first instant at
	// which exactly one elector believed it led.
	var convs []time.Duration
	for _, from := range c.converge {
		if d, ok := convergence(ivs, from); ok {
			convs = append(convs, d)
		}
	}
	r.Convergence = statsOf(convs)
	return r
}

// successorFreed reports whether an elector restarted under cr's identity
// after the crash may have ended the lease itself before t. Such a
// successor takes the crashed leader's lease over at once (same identity,
// by design), and may then end it legitimately: a graceful Stop or a
// Resign releases what it holds (a Stop also gives back a lease its
// Acquire won just as it was stopping, without announcing a leadership, so
// no sample shows it), and a failed Acquire may undo what the call wrote.
// A successor that only crashed, or kept running, ended nothing: the
// check still applies.
func (c *chaos) successorFreed(cr mark[*instance], t time.Duration) bool {
	for _, inst := range c.all {
		if inst == cr.inst || inst.identity != cr.inst.identity || inst.started < cr.at || inst.started >= t {
			continue
		}
		crashed := false
		for _, f := range c.faults {
			if f.inst != inst || f.start >= t {
				continue
			}
			switch f.kind {
			case faultResign:
				return true
			case faultCrash:
				crashed = true
			}
		}
		if inst.stopAt > 0 && inst.stopAt < t && !crashed {
			return true
		}
		for _, at := range inst.acquireErrs {
			if at < t {
				return true
			}
		}
	}
	return false
}

// lastBelief returns inst's last sample saying it led, at or before t.
func lastBelief(inst *instance, t time.Duration) (time.Duration, bool) {
	var at time.Duration
	ok := false
	for _, s := range inst.samples {
		if s.first <= t {
			at, ok = min(s.last, t), true
		}
	}
	return at, ok
}

// convergence returns how long after from exactly one of ivs covered an
// instant.
func convergence(ivs []sampled, from time.Duration) (time.Duration, bool) {
	covering := func(t time.Duration) int {
		n := 0
		for _, s := range ivs {
			if s.first <= t && t <= s.last {
				n++
			}
		}
		return n
	}
	if covering(from) == 1 {
		return 0, true
	}
	for _, s := range ivs {
		if s.first >= from && covering(s.first) == 1 {
			return s.first - from, true
		}
	}
	return 0, false
}

// couldTakeOver reports whether, when cr's leader crashed, another elector
// could take over: the store was up and reachable (no server kill, no
// whole-cluster outage from a lease before the crash to until), the crashed
// leader's last renewals were not slowed by latency, and another elector
// was running, not cut off from the store (partition, refused connections),
// from a backoff before the crash until until. until is when another
// elector took over, or the end of the failover bound if none did.
func (c *chaos) couldTakeOver(cr mark[*instance], until time.Duration) bool {
	tm := c.o.Timing
	lo, hi := cr.at-tm.LeaseDuration, until
	for _, w := range append(append([]window(nil), c.downWindows...), c.outages...) {
		end := w.end
		if end < 0 {
			end = hi
		}
		if w.start <= hi && end >= lo {
			return false
		}
	}
	for _, f := range c.faults {
		if f.inst == cr.inst && f.kind == faultLatency && f.start <= cr.at && (f.end < 0 || f.end >= cr.at-tm.RenewDeadline) {
			return false
		}
	}
	quietFrom := cr.at - c.maxBackoff() - tm.RetryPeriod
	for _, inst := range c.all {
		if inst == cr.inst || inst.started > cr.at-tm.RetryPeriod || (inst.stopAt > 0 && inst.stopAt < hi) {
			continue
		}
		clean := true
		for _, f := range c.faults {
			switch f.kind {
			case faultPartitionShort, faultPartitionMid, faultPartitionLong, faultRefuse:
			default:
				continue // latency, a reset or a resignation does not keep a follower from taking over
			}
			end := f.end
			if end < 0 {
				end = hi
			}
			if f.inst == inst && f.start <= hi && end >= quietFrom {
				clean = false
				break
			}
		}
		if clean {
			return true
		}
	}
	return false
}

func countKind(rs []record, kind string) int {
	n := 0
	for _, r := range rs {
		if r.kind == kind {
			n++
		}
	}
	return n
}

// checkPairs checks inst's callbacks (start, ctx-end, stop, in that order,
// same term) and observer events (start, stop, …, detached last).
func (c *chaos) checkPairs(inst *instance, violate func(string, ...any)) {
	want := []string{"start", "ctx-end", "stop"}
	for i, cb := range inst.cbs {
		if k := want[i%3]; cb.kind != k {
			violate("%s: callback %d is %s, want %s (callbacks %v)", inst.identity, i, cb.kind, k, kinds(inst.cbs))
			break
		}
		if i%3 > 0 && cb.term != inst.cbs[i-i%3].term {
			violate("%s: %s for term %d after OnStartedLeading for term %d", inst.identity, cb.kind, cb.term, inst.cbs[i-i%3].term)
			break
		}
	}
	if len(inst.cbs)%3 != 0 {
		violate("%s: callbacks not paired after Stop: %v", inst.identity, kinds(inst.cbs))
	}
	evs := inst.evs
	if len(evs) == 0 || evs[len(evs)-1].kind != "detached" {
		violate("%s: no EventDetached last: %v", inst.identity, kinds(evs))
		return
	}
	evs = evs[:len(evs)-1]
	for i, ev := range evs {
		k := "start"
		if i%2 == 1 {
			k = "stop"
		}
		if ev.kind != k || i%2 == 1 && ev.term != evs[i-1].term {
			violate("%s: events not paired: %v", inst.identity, kinds(inst.evs))
			return
		}
	}
	if len(evs)%2 != 0 {
		violate("%s: started-leading without stopped-leading: %v", inst.identity, kinds(inst.evs))
	}
}

func kinds(rs []record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s(%d)@%v", r.kind, r.term, r.at.Round(time.Millisecond))
	}
	return out
}
