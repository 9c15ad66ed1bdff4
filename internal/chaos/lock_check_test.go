package chaos

import (
	"strings"
	"testing"
)

// RunLockChaos's checks must catch what they claim to catch; these feed
// its analysis made-up recordings.

func testLockChaos(keys int, lose bool) *lockChaos {
	o := Options{Target: "127.0.0.1:1", Seed: 1, Locks: true, Keys: keys, RestartLosesLeases: lose}.withDefaults()
	return newLockChaos(nil, o)
}

func addLockClient(lc *lockChaos, identity string) *lockClient {
	cl := newLockClient(memberBase{id: len(lc.all) + 1, identity: identity}, len(lc.keys))
	lc.all = append(lc.all, cl)
	return cl
}

// held records that cl took key k with term at acquired and held it until
// end: released (Release began at end, the Observer reported the end a
// moment later) or lost (the Observer reported the loss at end).
func held(cl *lockClient, k int, term uint64, acquired, end float64, released bool) *lockHold {
	h := &lockHold{cl: cl, key: k, term: term, acquired: sec(acquired), releaseStart: -1}
	if released {
		h.releaseStart = sec(end)
		cl.ends[k] = append(cl.ends[k], lockEnd{at: sec(end + 0.001)})
	} else {
		cl.ends[k] = append(cl.ends[k], lockEnd{at: sec(end), lost: true, cause: "lock: lost"})
	}
	cl.holds[k] = append(cl.holds[k], h)
	cl.acquired[k]++
	return h
}

func TestLockChaosCheckClean(t *testing.T) {
	lc := testLockChaos(2, false)
	a, b, c := addLockClient(lc, "a"), addLockClient(lc, "b"), addLockClient(lc, "c")
	held(a, 0, 10, 1, 2, true)
	held(b, 0, 11, 2.002, 4, false) // lost: the Context ended at the renew deadline
	held(a, 0, 12, 5.1, 6, true)
	held(c, 1, 3, 1.5, 5.5, true) // the other key, at the same time
	held(a, 1, 4, 5.6, 5.7, true) // a holds both keys at once
	// A late write of the highest term is accepted.
	lc.logs[0].log = []fencedWrite{{at: sec(1), term: 10}, {at: sec(2.5), term: 11}, {at: sec(3), term: 11, late: true}}
	r := lc.analyse()
	if len(r.Violations) != 0 {
		t.Fatalf("clean recording: %v", r.Violations)
	}
	if r.Acquisitions != 5 || r.Released != 4 || r.Lost != 1 || r.Overlaps != 0 || r.ConcurrentKeys != 4 {
		t.Fatalf("clean recording: %+v", r)
	}
	if k := r.Keys[0]; k.Acquisitions != 3 || k.FirstTerm != 10 || k.LastTerm != 12 {
		t.Fatalf("key 0: %+v", k)
	}
	if r.FencedAccepted != 2 {
		t.Fatalf("fenced writes accepted: %d, want 2 (the late one apart)", r.FencedAccepted)
	}
}

func TestLockChaosCheckOverlap(t *testing.T) {
	lc := testLockChaos(1, false)
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	held(a, 0, 10, 1, 5, false)
	held(b, 0, 11, 4.999, 6, true)
	r := lc.analyse()
	if r.Overlaps != 1 || !hasViolation(r, "at once from 4.999s to 5s") {
		t.Fatalf("overlap not caught: %+v", r)
	}
}

func TestLockChaosCheckReleaseEndsHold(t *testing.T) {
	// The hold ends when Release begins (its Context ends right then),
	// not when the Observer hears of it.
	lc := testLockChaos(1, false)
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	held(a, 0, 10, 1, 5, true) // Observer end at 5.001
	held(b, 0, 11, 5.0005, 6, true)
	r := lc.analyse()
	if r.Overlaps != 0 || len(r.Violations) != 0 {
		t.Fatalf("hand-over after a release counted as overlap: %v", r.Violations)
	}
}

func TestLockChaosCheckDocumentedOverlap(t *testing.T) {
	for _, lose := range []bool{true, false} {
		lc := testLockChaos(1, lose)
		lc.downWindows = []window{{start: sec(4), end: sec(4.5)}}
		a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
		held(a, 0, 10, 1, 5, false)
		held(b, 0, 11, 4.6, 9, true)
		r := lc.analyse()
		if lose && (r.Overlaps != 0 || r.DocumentedOverlaps != 1 || len(r.Violations) != 0 ||
			len(r.Documented) != 1 || !strings.Contains(r.Documented[0], "killed at 4s and back at 4.5s, lost its leases")) {
			t.Fatalf("overlap in the restart window not documented: %+v", r)
		}
		if !lose && r.Overlaps != 1 {
			t.Fatalf("a store that keeps its leases has no documented window: %+v", r)
		}
	}
	// Outside the window (RenewDeadline + slack after the server is back)
	// it is a violation even for a store that loses its leases.
	lc := testLockChaos(1, true)
	lc.downWindows = []window{{start: sec(4), end: sec(4.5)}}
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	held(a, 0, 10, 1, 9, false)
	held(b, 0, 11, 8, 10, true)
	if r := lc.analyse(); r.Overlaps != 1 {
		t.Fatalf("overlap after the window not caught: %+v", r)
	}
}

func TestLockChaosCheckEmptyHold(t *testing.T) {
	// A lock whose Context had ended when Acquire returned was never held.
	lc := testLockChaos(1, false)
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	held(a, 0, 10, 1, 5, true)
	held(b, 0, 11, 3, 2.9, false)
	r := lc.analyse()
	if r.Overlaps != 0 || r.LostAtReturn != 1 || len(r.Violations) != 0 {
		t.Fatalf("empty hold: %+v", r)
	}
}

func TestLockChaosCheckTerms(t *testing.T) {
	lc := testLockChaos(1, false)
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	held(a, 0, 10, 1, 2, true)
	held(b, 0, 9, 3, 4, true)
	held(a, 0, 10, 5, 6, true)
	r := lc.analyse()
	if !hasViolation(r, "term 9 taken by b at 3s after term 10 taken by a at 1s") {
		t.Fatalf("decreasing term not caught: %v", r.Violations)
	}
	if !hasViolation(r, "term 10 taken twice") {
		t.Fatalf("repeated term not caught: %v", r.Violations)
	}
}

func TestLockChaosCheckFencedLog(t *testing.T) {
	lc := testLockChaos(1, false)
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	ha := held(a, 0, 10, 1, 2, true)
	held(b, 0, 11, 3, 4, true)
	lc.logs[0].refusedLive = []fencedWrite{{at: sec(1.5), term: 10, highest: 11, hold: ha}}
	lc.logs[0].log = []fencedWrite{{at: sec(1), term: 11}, {at: sec(3), term: 10}}
	r := lc.analyse()
	if r.LiveRefused != 1 || !hasViolation(r, "refused term 10 of a at 1.5s while its Context was live") {
		t.Fatalf("live write refused not caught: %v", r.Violations)
	}
	if !hasViolation(r, "accepted term 10 at 3s after term 11") {
		t.Fatalf("fenced log accepting a lower term not caught: %v", r.Violations)
	}
}

func TestLockChaosCheckEvents(t *testing.T) {
	lc := testLockChaos(1, false)
	a := addLockClient(lc, "a")
	held(a, 0, 10, 1, 2, true)
	held(a, 0, 11, 3, 4, false)
	a.ends[0] = a.ends[0][:1] // the second Lock, never released, never ended
	r := lc.analyse()
	if !hasViolation(r, "2 acquisitions returned, 2 reported by the Observer, 1 Context ends reported") ||
		!hasViolation(r, "(term 11, acquired at 3s) never ended") {
		t.Fatalf("missing Context end not caught: %v", r.Violations)
	}
}

func TestLockChaosCheckIndependence(t *testing.T) {
	lc := testLockChaos(2, false)
	a, b := addLockClient(lc, "a"), addLockClient(lc, "b")
	held(a, 0, 10, 1, 2, true)
	held(b, 1, 3, 2.5, 3, true)
	if r := lc.analyse(); !hasViolation(r, "no two keys were ever held at the same instant") {
		t.Fatalf("keys never held at once not caught: %v", r.Violations)
	}
}
