package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

// childRedisEnv is the Redis address a "fenced" test child writes to.
const childRedisEnv = "EXEC_TEST_REDIS"

// fencedChild is the test child in mode "fenced": every 20 ms it writes
// through redisfence under FXELECTION_ELECTION and FXELECTION_TERM, as the
// exec documentation tells a child to, and appends
//
//	W term pid unix-nanos ok|stale|error START-unix-nanos
//
// (the write's start in the last field); it exits 0 on SIGINT or SIGTERM.
func fencedChild(line func(kind string, more ...string), sigs <-chan os.Signal) {
	c := redis.NewClient(&redis.Options{Addr: os.Getenv(childRedisEnv), ContextTimeoutEnabled: true})
	defer c.Close()
	g := redisfence.New(c, redisfence.Options{})
	election := os.Getenv("FXELECTION_ELECTION")
	term, _ := strconv.ParseUint(os.Getenv("FXELECTION_TERM"), 10, 64)
	ctx := fence.WithToken(context.Background(), fence.Token{Election: election, Term: term})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		start := strconv.FormatInt(time.Now().UnixNano(), 10)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := g.Set(wctx, "exec:"+redisfence.HashTag(election)+":data", term, 0)
		cancel()
		switch {
		case err == nil:
			line("W", "ok", start)
		case errors.Is(err, fence.ErrStaleTerm):
			line("W", "stale", start)
		default:
			line("W", "error", start)
		}
		select {
		case sig := <-sigs:
			line("S", signalName(sig.(syscall.Signal)))
			if stopSignal(sig) {
				return
			}
		case <-tick.C:
		}
	}
}

// TestExecPausedChildFenced: two exec processes on Redis whose children
// write through redisfence with FXELECTION_TERM. The leading command is
// frozen with SIGSTOP past its lease: its child keeps running (a stopped
// process cannot stop it; exec's documentation says so) beside the next
// leader's, and once the next leader's child wrote, every write of the
// paused command's child is refused; no write of the live leader's child
// is. After SIGCONT the command finds its leadership over and stops its
// child.
func TestExecPausedChildFenced(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	p := newExecProcs(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		p.env = []string{childModeEnv + "=fenced", childFileEnv + "=" + p.file, childRedisEnv + "=" + srv.Addr(), "FXELECTION_LOG_FORMAT=json", "GORACE=atexit_sleep_ms=0"}
		p.procs.start("exec", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "exec-pause", "--http", "",
			"--lease", itLease.String(), "--renew-deadline", itRenew.String(), "--retry", itRetry.String(),
			"--kill-after", itKillAfter.String(), "--", self)
	}
	started := func(after uint64) func(logLine) bool {
		return func(l logLine) bool { return l.Msg == "child started" && l.Term > after }
	}
	type write struct {
		ok, stale bool
		start     time.Time
	}
	writes := func(ls []childLine, pid int) []write {
		var out []write
		for _, l := range ls {
			if l.kind == "W" && l.pid == pid && len(l.rest) == 2 {
				ns, _ := strconv.ParseInt(l.rest[1], 10, 64)
				out = append(out, write{ok: l.rest[0] == "ok", stale: l.rest[0] == "stale", start: time.Unix(0, ns)})
			}
		}
		return out
	}
	first := p.waitLog(itWait, started(0))
	p.waitLines(itWait, func(ls []childLine) bool { return len(writes(ls, first.Pid)) >= 5 })
	p.signal(first.proc, syscall.SIGSTOP)
	second := p.waitLog(itWait, started(first.Term))
	if second.proc == first.proc {
		t.Fatalf("the stopped process %d led again", first.proc)
	}
	// Wait for the paused command's child to write five times after the
	// next leader's child's first accepted write had completed.
	var after time.Time
	p.waitLines(itWait, func(ls []childLine) bool {
		after = time.Time{}
		for _, l := range ls {
			if l.kind == "W" && l.pid == second.Pid && l.rest[0] == "ok" {
				after = l.at // the line is written once the write completed
				break
			}
		}
		if after.IsZero() {
			return false
		}
		n := 0
		for _, w := range writes(ls, first.Pid) {
			if w.start.After(after) {
				n++
			}
		}
		return n >= 5
	})
	contAt := p.signal(first.proc, syscall.SIGCONT)
	p.waitLog(itWait, func(l logLine) bool { return l.Msg == "child exited" && l.Pid == first.Pid })
	time.Sleep(200 * time.Millisecond) // a few more writes of the live child

	ls := readChildFile(t, p.file)
	var late, lateRefused, lateAccepted int
	for _, w := range writes(ls, first.Pid) {
		if !w.start.After(after) {
			continue
		}
		late++
		switch {
		case w.stale:
			lateRefused++
		case w.ok:
			lateAccepted++
		}
	}
	live := writes(ls, second.Pid)
	liveRefused := 0
	for _, w := range live {
		if !w.ok {
			liveRefused++
		}
	}
	t.Logf("the paused command's child (term %d) wrote %d times after the next leader's child (term %d) first wrote: %d refused, %d accepted; the live child wrote %d times, %d refused; SIGCONT at %v",
		first.Term, late, second.Term, lateRefused, lateAccepted, len(live), liveRefused, contAt.Format(time.RFC3339Nano))
	if late == 0 {
		t.Error("the paused command's child did not keep running")
	}
	if lateAccepted > 0 || lateRefused != late {
		t.Errorf("%d of the paused command's child's %d late writes were accepted (%d refused), want all refused", lateAccepted, late, lateRefused)
	}
	if liveRefused > 0 {
		t.Errorf("%d writes of the live leader's child were refused", liveRefused)
	}
	for _, i := range []int{first.proc, second.proc} {
		p.signal(i, syscall.SIGTERM)
		if code := p.exit(i, itWait); code != 0 {
			t.Errorf("process %d exited %d after SIGTERM, want 0", i, code)
		}
	}
}
