package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// Timings of the three-process exec tests: the window between a
// step-down and the earliest takeover is lease − renew deadline = 1.5s;
// --kill-after (300ms) is well inside it so that a busy machine keeps the
// no-overlap verdict.
const (
	itLease, itRenew, itRetry = 3 * time.Second, 1500 * time.Millisecond, 300 * time.Millisecond
	itKillAfter               = 300 * time.Millisecond
	// itSlack is the slack on every latency the tests check (a signal
	// sent, a child gone): generous, for a machine with its cores
	// oversubscribed. Safety (no two children at once) is checked by the
	// order of events, never against the clock.
	itSlack = 10 * time.Second
	// itWait bounds every wait for something that must happen (a child
	// started, its first appends, a process gone): a wait ends as soon as
	// it happens, so the bound only decides how long a broken run takes
	// to fail. It is the protocol's bound (a lease, a retry) many times
	// over.
	itWait = 2 * time.Minute
)

// TestExecThreeProcessesOnRedis: three exec processes on one Redis, each
// through a proxy of its own, children that ignore SIGTERM (so every
// step-down ends in SIGKILL after --kill-after).
func TestExecThreeProcessesOnRedis(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	execFailovers(t, "ignore-term", srv.Addr(), func(addr string) []string {
		return []string{"--backend", "redis", "--redis-addr", addr}
	})
}

// TestExecThreeProcessesOnPostgres: the same on PostgreSQL, with children
// that exit on SIGTERM.
func TestExecThreeProcessesOnPostgres(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewPostgres(t, testserver.PostgresOptions{})
	execFailovers(t, "append", srv.Addr(), func(addr string) []string {
		return []string{"--backend", "postgres", "--postgres-dsn", strings.Replace(srv.DSN(), srv.Addr(), addr, 1)}
	})
}

// execFailovers runs three exec processes whose store (at target) each
// reaches through its own proxy, with children in mode, and takes the
// leader down four ways in turn: SIGKILL; SIGSTOP for longer than the
// lease, then SIGCONT; a partition of its store connection; a graceful
// SIGTERM. Then it checks that no two children ran at once except while a
// stopped command could not stop its own, that each deposed child got its
// signal and was gone before the next started, and that terms increase.
func execFailovers(t *testing.T, mode, target string, backend func(addr string) []string) {
	p := newExecProcs(t)
	var proxies []*electiontest.Proxy
	for range 3 {
		px, err := electiontest.NewProxy(target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = px.Close() })
		proxies = append(proxies, px)
		p.start(mode, append(backend(px.Addr()), "--election", "exec-it", "--http", "",
			"--lease", itLease.String(), "--renew-deadline", itRenew.String(), "--retry", itRetry.String(),
			"--kill-after", itKillAfter.String())...)
	}
	started := func(after uint64) func(logLine) bool {
		return func(l logLine) bool { return l.Msg == "child started" && l.Term > after }
	}
	exited := func(pid int) func(logLine) bool {
		return func(l logLine) bool { return l.Msg == "child exited" && l.Pid == pid }
	}
	appended := func(pid, n int) func([]childLine) bool {
		return func(ls []childLine) bool {
			c := 0
			for _, l := range ls {
				if l.kind == "T" && l.pid == pid {
					c++
				}
			}
			return c >= n
		}
	}
	takeover := func(old logLine) logLine {
		t.Helper()
		l := p.waitLog(itWait, started(old.Term))
		if l.proc == old.proc {
			t.Fatalf("process %d led again", l.proc)
		}
		p.waitLines(itWait, appended(l.Pid, 5))
		return l
	}

	first := p.waitLog(itWait, started(0))
	p.waitLines(itWait, appended(first.Pid, 5))

	// 1. SIGKILL: the kernel kills the child (Pdeathsig) at once; the
	// lease expires and another process's child starts.
	killedAt := p.signal(first.proc, syscall.SIGKILL)
	second := takeover(first)

	// 2. SIGSTOP past the lease: the stopped command cannot stop its
	// child, which runs on beside the next leader's (the documented
	// window, for which FXELECTION_TERM is there) until SIGCONT; then the
	// command finds its leadership over and stops the child at once.
	p.signal(second.proc, syscall.SIGSTOP)
	third := takeover(second)
	contAt := p.signal(second.proc, syscall.SIGCONT)
	p.waitLog(itWait, exited(second.Pid))

	// 3. Partition: renewals fail, the command steps down at the renew
	// deadline and stops its child; the others take over once the lease
	// expired.
	partedAt := time.Now()
	proxies[third.proc].Partition()
	fourth := takeover(third)
	p.waitLog(itWait, exited(third.Pid))
	proxies[third.proc].Heal()

	// 4. Graceful SIGTERM: forwarded to the child; once it is gone the
	// lease is released and the last process takes over at its next
	// attempt (it may still be backing off after its partition).
	termAt := p.signal(fourth.proc, syscall.SIGTERM)
	fifth := takeover(fourth)
	wantCode := 0 // the child exits 0 on SIGTERM…
	if mode == "ignore-term" {
		wantCode = 128 + int(syscall.SIGKILL) // …or is killed
	}
	if code := p.exit(fourth.proc, itWait); code != wantCode {
		t.Errorf("SIGTERM'd command exited %d, want the child's %d", code, wantCode)
	}
	time.Sleep(200 * time.Millisecond) // a few appends of the last child

	ls := readChildFile(t, p.file)
	logs := p.snapshot()
	logAt := func(msg string, match func(logLine) bool) time.Time {
		for _, l := range logs {
			if l.Msg == msg && match(l) {
				return l.Time
			}
		}
		t.Errorf("no %q log line", msg)
		return time.Time{}
	}
	ivs := map[int]interval{}
	for _, iv := range childIntervals(ls) {
		ivs[iv.pid] = iv
	}
	sigAt := func(pid int, name string) time.Time {
		for _, l := range ls {
			if l.kind == "S" && l.pid == pid && l.rest[0] == name {
				return l.at
			}
		}
		return time.Time{}
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }

	// Every child ran with its leadership's term, in increasing order, and
	// each started only after the one before had stopped appending, but
	// for the stopped command's child, which may run until SIGCONT plus
	// --kill-after.
	order := []logLine{first, second, third, fourth, fifth}
	for i, l := range order {
		iv, ok := ivs[l.Pid]
		if !ok || iv.term != l.Term {
			t.Fatalf("child %d (pid %d, term %d) appended %+v", i, l.Pid, l.Term, iv)
		}
		if i == 0 {
			continue
		}
		prev := ivs[order[i-1].Pid]
		switch {
		case i == 2: // second's child, beside third's
			if bound := contAt.Add(itKillAfter + itSlack); prev.last.After(bound) {
				t.Errorf("the stopped command's child appended until %v after SIGCONT, want within --kill-after (+%v)", prev.last.Sub(contAt), itSlack)
			}
		case !prev.last.Before(iv.first):
			t.Errorf("children overlap: term %d appended until %v, term %d from %v", prev.term, prev.last, iv.term, iv.first)
		}
	}

	// 1. SIGKILL.
	t.Logf("SIGKILL: the child's last append %s after the command's SIGKILL; the next child's first %s after that (lease %v)",
		ms(ivs[first.Pid].last.Sub(killedAt)), ms(ivs[second.Pid].first.Sub(ivs[first.Pid].last)), itLease)
	if d := ivs[first.Pid].last.Sub(killedAt); d > itSlack {
		t.Errorf("the SIGKILLed command's child appended for %v more", d)
	}

	// 2. SIGSTOP/SIGCONT.
	signalled := logAt("child signalled", func(l logLine) bool { return l.Pid == second.Pid && l.Signal == "SIGTERM" })
	gone := logAt("child exited", func(l logLine) bool { return l.Pid == second.Pid })
	t.Logf("SIGSTOP: children overlapped for %s; after SIGCONT the command sent SIGTERM in %s, the child got it in %s, was gone in %s",
		ms(ivs[second.Pid].last.Sub(ivs[third.Pid].first)), ms(signalled.Sub(contAt)), ms(sigAt(second.Pid, "SIGTERM").Sub(contAt)), ms(gone.Sub(contAt)))
	if signalled.Sub(contAt) > itSlack {
		t.Errorf("SIGTERM %v after SIGCONT", signalled.Sub(contAt))
	}

	// 3 and 4: the deposed child got SIGTERM promptly after its command's
	// step-down (or the signal), and was gone (reaped) before the next
	// child's first append.
	for _, tr := range []struct {
		name     string
		at       time.Time
		old, new logLine
	}{{"partition", partedAt, third, fourth}, {"SIGTERM", termAt, fourth, fifth}} {
		stepDown := logAt("leadership lost", func(l logLine) bool { return l.proc == tr.old.proc && l.Term == tr.old.Term })
		signalled := logAt("child signalled", func(l logLine) bool { return l.Pid == tr.old.Pid && l.Signal == "SIGTERM" })
		got := sigAt(tr.old.Pid, "SIGTERM")
		gone := logAt("child exited", func(l logLine) bool { return l.Pid == tr.old.Pid })
		next := ivs[tr.new.Pid].first
		t.Logf("%s: from the fault, step-down logged %s, SIGTERM sent %s, received %s, child gone %s, next child's first append %s",
			tr.name, ms(stepDown.Sub(tr.at)), ms(signalled.Sub(tr.at)), ms(got.Sub(tr.at)), ms(gone.Sub(tr.at)), ms(next.Sub(tr.at)))
		if got.IsZero() || got.Sub(signalled) > itSlack {
			t.Errorf("%s: the child got SIGTERM %v after the command sent it", tr.name, got.Sub(signalled))
		}
		if !gone.Before(next) {
			t.Errorf("%s: the child was gone %v after the next child's first append", tr.name, gone.Sub(next))
		}
		if mode == "ignore-term" {
			killed := logAt("child signalled", func(l logLine) bool { return l.Pid == tr.old.Pid && l.Signal == "SIGKILL" })
			if d := killed.Sub(signalled); d < itKillAfter-50*time.Millisecond || d > itKillAfter+itSlack {
				t.Errorf("%s: SIGKILL %v after SIGTERM, want --kill-after (%v)", tr.name, d, itKillAfter)
			}
		}
	}
}

// TestExecNoRecampaign: with no_recampaign, a command whose leadership
// ends (its store connection cut) stops its child and exits with the
// child's code instead of waiting for a leadership that cannot come.
func TestExecNoRecampaign(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	px, err := electiontest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	doc := filepath.Join(t.TempDir(), "once.json")
	if err := os.WriteFile(doc, []byte(`{"elections": [{"name": "once", "identity": "solo", "no_recampaign": true,
		"lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms",
		"backend": {"module": "fxelection.backends.redis", "addr": "`+px.Addr()+`"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newExecProcs(t)
	p.noID = true
	i := p.start("append", "--config", doc, "--http", "")
	child := p.waitLog(itWait, func(l logLine) bool { return l.Msg == "child started" })
	p.waitLines(itWait, func(ls []childLine) bool { return countKind(ls, "T") > 0 })
	px.Partition()
	if code := p.exit(i, itWait); code != 0 {
		t.Fatalf("exit code %d, want the child's 0 (it exits 0 on SIGTERM)", code)
	}
	p.waitLog(itWait, func(l logLine) bool { return l.Msg == "child exited" && l.Pid == child.Pid })
	px.Heal()
}
