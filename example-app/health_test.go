package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestHealthCmd: two candidates on one private Redis with --health-cmd
// (test -f FILE). The one whose check fails never leads; once its file
// appears and the leader's disappears, the leader resigns (reason
// unhealthy) and the other leads within RetryPeriod plus the threshold's
// checks (asserted with a generous margin; the exact bound is checked on
// fake time in fxelection's health tests).
func TestHealthCmd(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	dir := t.TempDir()
	okA, okB := filepath.Join(dir, "a-ok"), filepath.Join(dir, "b-ok")
	if err := os.WriteFile(okA, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &procs{t: t}
	args := func(file string) []string {
		return []string{"--backend", "redis", "--redis-addr", srv.Addr(), "--election", "healthy",
			"--lease", "2s", "--renew-deadline", "1300ms", "--retry", "300ms", "--log-format", "json",
			"--health-cmd", "test -f " + file, "--health-interval", "100ms", "--health-threshold", "2", "--http", ""}
	}
	a := p.start(args(okA)...)
	b := p.start(args(okB)...)
	first, _ := p.waitFor(0, 30*time.Second, func(l logLine) bool { return l.Msg == "leadership acquired" })
	if first.proc != a {
		t.Fatalf("process %d led, but its health check fails", first.proc)
	}
	// Several retry periods and checks: the unhealthy one never leads.
	time.Sleep(2 * time.Second)
	for _, l := range p.snapshot() {
		if l.proc == b && l.Msg == "leadership acquired" {
			t.Fatalf("the unhealthy candidate led: %+v", l)
		}
	}

	// The leader turns unhealthy, the follower healthy.
	if err := os.WriteFile(okB, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // b's first check passes
	turned := time.Now()
	if err := os.Remove(okA); err != nil {
		t.Fatal(err)
	}
	lost, _ := p.waitFor(0, 30*time.Second, func(l logLine) bool {
		return l.proc == a && l.Msg == "leadership lost"
	})
	if lost.Reason != "unhealthy" {
		t.Fatalf("the leader stopped leading because %q, want unhealthy", lost.Reason)
	}
	next, _ := p.waitFor(0, 30*time.Second, func(l logLine) bool {
		return l.proc == b && l.Msg == "leadership acquired"
	})
	if next.Term <= first.Term {
		t.Fatalf("new term %d, not above %d", next.Term, first.Term)
	}
	// Bound: (threshold + 1) × interval for the resignation, then the
	// release wakes b at once (push) or its next retry: with 10× margin
	// and busySlack for a loaded machine.
	const bound = 3*100*time.Millisecond + 300*time.Millisecond
	if took := next.at.Sub(turned); took > 10*bound+busySlack {
		t.Fatalf("the healthy candidate led %v after the leader turned unhealthy, want within %v (10× %v, +%v)", took, 10*bound, bound, busySlack)
	}
	t.Logf("resigned %v and the healthy candidate led %v after the leader's check started failing", lost.at.Sub(turned), next.at.Sub(turned))
}
