package chaos

import (
	"testing"
	"time"
)

// The pause checks must catch what they claim to catch; these feed the
// analysis made-up recordings (times in seconds on the shared clock).

func testPauseRun() *pauseRun {
	o := Options{Target: "127.0.0.1:1", Seed: 1, Pauses: true, Timing: Timing{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}}.withDefaults()
	return &pauseRun{o: o, names: []string{"e"}, highest: []uint64{0}, counts: map[string]int{}}
}

func ns(s float64) int64 { return int64(s * float64(time.Second)) }

func (p *pauseRun) member(id string) *pmember {
	m := &pmember{identity: id, open: map[int]*belief{}, begins: map[uint64]int64{}}
	p.members = append(p.members, m)
	return m
}

func (m *pmember) believe(term uint64, start, end float64) {
	m.beliefs = append(m.beliefs, &belief{m: m, term: term, start: ns(start), end: ns(end)})
}

func (m *pmember) pause(start, end float64) {
	m.pauses = append(m.pauses, pauseWin{kind: pauseBeyond, start: ns(start), end: ns(end)})
}

// write records a write of m with term, begun at begin, sent at sent, and
// applies the in-process fence to it.
func (p *pauseRun) write(m *pmember, term uint64, begin, sent float64) {
	w := &pwrite{m: m, term: term, begin: ns(begin), sent: ns(sent), arrive: ns(sent)}
	p.fence(w)
	p.writes = append(p.writes, w)
}

func TestPauseChecks(t *testing.T) {
	t.Run("a paused holder, replaced, fenced off", func(t *testing.T) {
		p := testPauseRun()
		a, b := p.member("a"), p.member("b")
		a.believe(1, 0, 5.001) // frozen 1…5, aware of the loss 1ms after SIGCONT
		a.pause(1, 5)
		b.believe(2, 2.7, 8)
		p.write(a, 1, 0.5, 0.51)   // live
		p.write(b, 2, 3, 3.01)     // live
		p.write(a, 1, 0.99, 5.001) // in flight at the pause: refused
		r := p.analyse(0)
		if len(r.Violations) != 0 {
			t.Fatalf("violations: %q", r.Violations)
		}
		pr := r.Pauses
		if pr.PauseOverlaps != 1 || pr.StaleRefused != 1 || pr.WriteInFlight != 1 || r.FencedAccepted != 2 || pr.LossAfterResume.N != 1 || pr.WhileHolding != 1 {
			t.Errorf("report %+v, fenced %d", pr, r.FencedAccepted)
		}
	})
	t.Run("an overlap without a pause", func(t *testing.T) {
		p := testPauseRun()
		a, b := p.member("a"), p.member("b")
		a.believe(1, 0, 5)
		b.believe(2, 4, 8)
		r := p.analyse(0)
		if r.Overlaps != 1 || !hasViolation(r, "neither paused") {
			t.Errorf("overlaps %d, violations %q", r.Overlaps, r.Violations)
		}
	})
	t.Run("a live write refused", func(t *testing.T) {
		p := testPauseRun()
		a, b := p.member("a"), p.member("b")
		b.believe(2, 0, 1)
		a.believe(1, 1.5, 3)
		p.write(b, 2, 0.5, 0.51)
		p.write(a, 1, 2, 2.01)
		r := p.analyse(0)
		if r.Pauses.LiveRefused != 1 || !hasViolation(r, "while it led unpaused") || !hasViolation(r, "believed term 1") {
			t.Errorf("live refused %d, violations %q", r.Pauses.LiveRefused, r.Violations)
		}
	})
	t.Run("a stale write accepted by a guard", func(t *testing.T) {
		p := testPauseRun()
		a, b := p.member("a"), p.member("b")
		a.believe(1, 0, 5.001)
		a.pause(1, 5)
		b.believe(2, 2.7, 8)
		p.write(b, 2, 3, 3.01)
		w := &pwrite{m: a, term: 1, begin: ns(0.99), sent: ns(5.001), arrive: ns(5.001), accepted: true} // a broken guard
		p.writes = append(p.writes, w)
		r := p.analyse(0)
		if r.StaleAccepted != 1 || !hasViolation(r, "the fence accepted term 1") {
			t.Errorf("stale accepted %d, violations %q", r.StaleAccepted, r.Violations)
		}
	})
	t.Run("a replaced holder unaware after SIGCONT", func(t *testing.T) {
		p := testPauseRun()
		a, b := p.member("a"), p.member("b")
		a.believe(1, 0, 9) // 4s after SIGCONT: beyond renew deadline + slack (3s)
		a.pause(1, 5)
		b.believe(2, 2.7, 10)
		r := p.analyse(0)
		if !hasViolation(r, "after SIGCONT") {
			t.Errorf("violations %q", r.Violations)
		}
	})
	t.Run("a term believed by two members", func(t *testing.T) {
		p := testPauseRun()
		a, b := p.member("a"), p.member("b")
		a.believe(1, 0, 1)
		b.believe(1, 2, 3)
		r := p.analyse(0)
		if !hasViolation(r, "term 1 believed by a") {
			t.Errorf("violations %q", r.Violations)
		}
	})
}

func TestRunPattern(t *testing.T) {
	if got, want := runPattern("TestSoak/a.b"), `^TestSoak$/^a\.b$`; got != want {
		t.Errorf("runPattern = %q, want %q", got, want)
	}
}
