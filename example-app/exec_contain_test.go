package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/proctree"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// noReapEnv makes the test binary an init that reaps late (noReapMain).
const noReapEnv = "EXEC_TEST_NOREAP"

// noReapMain runs os.Args[1:] as its child, passing on the signals exec
// forwards, and exits with its code; it is a child subreaper that reaps
// nothing else: a process re-parented to it stays a zombie, as under an
// init that reaps late.
func noReapMain() {
	_ = os.Unsetenv(noReapEnv)
	if err := proctree.Subreaper(); err != nil {
		os.Exit(102)
	}
	c := exec.Command(os.Args[1], os.Args[2:]...)
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	if err := c.Start(); err != nil {
		os.Exit(103)
	}
	go func() {
		for sig := range sigs {
			_ = c.Process.Signal(sig)
		}
	}()
	err := c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	os.Exit(0)
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(raw), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// appenders are the pids that wrote T lines, by first append.
func appenders(ls []childLine) []int {
	var pids []int
	for _, iv := range childIntervals(ls) {
		pids = append(pids, iv.pid)
	}
	return pids
}

// noOverlap fails t unless each process's appends all come before the
// next one's first.
func noOverlap(t *testing.T, ls []childLine) {
	t.Helper()
	ivs := childIntervals(ls)
	for i := 1; i < len(ivs); i++ {
		for _, prev := range ivs[:i] {
			if !prev.last.Before(ivs[i].first) {
				t.Errorf("processes overlap: pid %d (term %d) appended until %v after pid %d (term %d) started",
					prev.pid, prev.term, prev.last.Sub(ivs[i].first), ivs[i].pid, ivs[i].term)
			}
		}
	}
}

// TestExecStopKillsDaemons: a daemon the child started (a new session, not
// in its process group) is gone when exec, stopped by SIGTERM, exits.
func TestExecStopKillsDaemons(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	p := newExecProcs(t)
	i := p.start("spawn:setsid:append", memoryExec...)
	ls := p.waitLines(30*time.Second, func(ls []childLine) bool { return len(appenders(ls)) == 2 })
	p.signal(i, syscall.SIGTERM)
	if code := p.exit(i, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d, want the child's 0", code)
	}
	for _, pid := range appenders(ls) {
		if alive(pid) {
			t.Errorf("process %d the child started runs on after exec exited", pid)
		}
	}
}

// TestExecRestartAlwaysOneDaemon: with --restart always, a child that
// daemonizes and exits (setsid, nginx, *ctl start) leaves one daemon at a
// time: the next child starts once the last one's daemon is gone.
func TestExecRestartAlwaysOneDaemon(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	p := newExecProcs(t)
	i := p.start("spawn:setsid:exit", append([]string{"--restart", "always"}, memoryExec...)...)
	ls := p.waitLines(60*time.Second, func(ls []childLine) bool { return len(appenders(ls)) >= 3 })
	running := 0
	for _, pid := range appenders(ls) {
		if alive(pid) {
			running++
		}
	}
	if running > 1 {
		t.Errorf("%d daemons running, want at most 1", running)
	}
	p.signal(i, syscall.SIGTERM)
	p.exit(i, 30*time.Second)
	ls = readChildFile(t, p.file)
	noOverlap(t, ls)
	for _, pid := range appenders(ls) {
		if alive(pid) {
			t.Errorf("daemon %d runs on after exec exited", pid)
		}
	}
}

// TestExecLossKillsDaemonsOnRedis: two exec processes on Redis, children
// that start a daemon: when the leader's store connection is cut, its
// child and the daemon are gone before the next leader's child (and its
// daemon) first append.
func TestExecLossKillsDaemonsOnRedis(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	p := newExecProcs(t)
	var proxies []*electiontest.Proxy
	for range 2 {
		px, err := electiontest.NewProxy(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = px.Close() })
		proxies = append(proxies, px)
		p.start("spawn:setsid:append", "--backend", "redis", "--redis-addr", px.Addr(), "--election", "exec-daemon", "--http", "",
			"--lease", itLease.String(), "--renew-deadline", itRenew.String(), "--retry", itRetry.String(), "--kill-after", itKillAfter.String())
	}
	first := p.waitLog(60*time.Second, func(l logLine) bool { return l.Msg == "child started" })
	byTerm := func(term uint64) func([]childLine) bool {
		return func(ls []childLine) bool {
			n := 0
			for _, iv := range childIntervals(ls) {
				if iv.term == term {
					n++
				}
			}
			return n == 2 // the child and its daemon
		}
	}
	p.waitLines(30*time.Second, byTerm(first.Term))
	proxies[first.proc].Partition()
	second := p.waitLog(itLease+itSlack+10*time.Second, func(l logLine) bool { return l.Msg == "child started" && l.Term > first.Term })
	p.waitLines(itSlack+10*time.Second, byTerm(second.Term))
	var lastOld, firstNew time.Time
	for _, iv := range childIntervals(readChildFile(t, p.file)) {
		switch {
		case iv.term == first.Term && iv.last.After(lastOld):
			lastOld = iv.last
		case iv.term == second.Term && (firstNew.IsZero() || iv.first.Before(firstNew)):
			firstNew = iv.first
		}
	}
	t.Logf("the deposed leader's processes last appended %v before the next leader's first", firstNew.Sub(lastOld).Round(time.Millisecond))
	if !lastOld.Before(firstNew) {
		t.Fatalf("term %d's processes appended until %v after term %d's first append", first.Term, lastOld.Sub(firstNew), second.Term)
	}
	proxies[first.proc].Heal()
}

// TestExecReapsWhatTheChildLeaves: under an init that reaps late (here:
// never), the child's processes that outlive it are exec's to reap, so a
// stop does not wait for the host's init: no "still there after SIGKILL"
// wait, the stop takes about --kill-after at most.
func TestExecReapsWhatTheChildLeaves(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newExecProcs(t)
	p.wrap = []string{self}
	p.env = []string{noReapEnv + "=1", childModeEnv + "=spawn:group:append", childFileEnv + "=" + p.file, "FXELECTION_LOG_FORMAT=json", "GORACE=atexit_sleep_ms=0"}
	i := p.procs.start(append(append([]string{"exec"}, memoryExec...), "--", self)...)
	p.waitLines(30*time.Second, func(ls []childLine) bool { return len(appenders(ls)) == 2 })
	stopped := p.signal(i, syscall.SIGTERM)
	if code := p.exit(i, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d, want the child's 0", code)
	}
	took := time.Since(stopped)
	for _, l := range p.snapshot() {
		if strings.Contains(l.Msg, "still") {
			t.Errorf("exec waited for its child's processes: %q", l.Msg)
		}
	}
	t.Logf("SIGTERM to exit: %v (kill-after 600ms, the wait for processes still there after SIGKILL %v)", took.Round(time.Millisecond), treeGoneWait)
}

// TestExecIgnoresCtrlZ: SIGTSTP, SIGTTIN and SIGTTOU do not stop exec (a
// stopped exec could not stop its child when its leadership ends, so two
// children would run): the leader keeps its leadership and child, and the
// other candidate never starts one within a lease.
func TestExecIgnoresCtrlZ(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	p := newExecProcs(t)
	for range 2 {
		p.start("append", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "exec-tstp", "--http", "",
			"--lease", itLease.String(), "--renew-deadline", itRenew.String(), "--retry", itRetry.String())
	}
	first := p.waitLog(60*time.Second, func(l logLine) bool { return l.Msg == "child started" })
	p.waitLines(30*time.Second, func(ls []childLine) bool { return countKind(ls, "T") > 0 })
	for _, sig := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU} {
		p.signal(first.proc, sig)
		p.waitLog(itSlack+10*time.Second, func(l logLine) bool {
			return l.proc == first.proc && strings.HasPrefix(l.Msg, "signal ignored") && l.Signal == signalName(sig)
		})
	}
	// Had it stopped, the other candidate would lead a lease later.
	time.Sleep(itLease + itSlack)
	for _, l := range p.snapshot() {
		if l.Msg == "child started" && l.proc != first.proc {
			t.Fatalf("another child started: %+v", l)
		}
	}
	before := countKind(readChildFile(t, p.file), "T")
	p.waitLines(itSlack+10*time.Second, func(ls []childLine) bool { return countKind(ls, "T") > before })
}

// TestExecExitOnLoss: exec honours its document's exit_on_loss as "run"
// does: when the lease is taken away (FLUSHALL under the leader), the
// child is stopped and exec exits 1 instead of campaigning again.
func TestExecExitOnLoss(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	doc := writeFile(t, "exit.json", `{"elections": [{"name": "exits", "identity": "node-a", "exit_on_loss": true,
		"lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms",
		"backend": {"module": "fxelection.backends.redis", "addr": "`+srv.Addr()+`"}}]}`)
	p := newExecProcs(t)
	p.noID = true
	i := p.start("append", "--config", doc, "--http", "")
	child := p.waitLog(30*time.Second, func(l logLine) bool { return l.Msg == "child started" })
	p.waitLines(10*time.Second, func(ls []childLine) bool { return countKind(ls, "T") > 0 })
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	if err := client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(i, itLease+itSlack+10*time.Second); code != exitOnLossCode {
		t.Fatalf("exit code %d, want %d", code, exitOnLossCode)
	}
	p.waitLog(time.Second, func(l logLine) bool { return l.Msg == "child exited" && l.Pid == child.Pid })
	if n := countKind(readChildFile(t, p.file), "E"); n != 1 {
		t.Fatalf("the child ran %d times, want once", n)
	}
}

// TestExecOnlyTheNamedElection: exec --config --election runs that
// election alone: the document's pools and lockers are not started, and
// hold no lease in the store.
func TestExecOnlyTheNamedElection(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	doc := writeFile(t, "mixed.json", `{"backends": {"shared": {"module": "fxelection.backends.redis", "addr": "`+srv.Addr()+`"}},
		"elections": [{"name": "solo", "identity": "node-a", "lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms", "backend": "shared"}],
		"pools": [{"name": "workers", "identity": "node-a", "shard_count": 4, "lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms", "backend": "shared"}],
		"lockers": [{"name": "locks", "backend": "shared"}]}`)
	o := defaults()
	o.configFile, o.election, o.given = doc, "solo", map[string]bool{"election": true}
	_, full, err := loadConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := o.pickElection(full)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Elections) != 1 || len(one.Pools) != 0 || len(one.Lockers) != 0 {
		t.Fatalf("exec runs %d elections, %d pools, %d lockers; want the one election", len(one.Elections), len(one.Pools), len(one.Lockers))
	}

	p := newExecProcs(t)
	p.noID = true
	i := p.start("append", "--config", doc, "--election", "solo", "--http", "")
	p.waitLog(30*time.Second, func(l logLine) bool { return l.Msg == "child started" })
	// A pool worker takes its member slot and shards in its first attempts.
	time.Sleep(3 * 300 * time.Millisecond)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	keys, err := client.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, "workers") || strings.Contains(k, "locks") {
			t.Errorf("the store holds %q: a pool or locker of the document ran", k)
		}
	}
	p.signal(i, syscall.SIGTERM)
	p.exit(i, 30*time.Second)
}

// TestExecChildGetsNoSecret: the child's environment holds no variable a
// document's {env.NAME} placeholder read, and a child of exec's uid
// cannot read exec's environment (its secrets) from /proc/$PPID/environ:
// exec is not dumpable. As root the test runs exec as nobody (65534),
// since root reads every process's environ.
func TestExecChildGetsNoSecret(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	t.Run("document placeholder", func(t *testing.T) {
		t.Parallel()
		doc := writeFile(t, "secret.json", `{"elections": [{"name": "s", "identity": "node-a", "metadata": {"token": "{env.`+docSecretEnv+`}"},
			"lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms", "backend": {"module": "fxelection.backends.memory"}}]}`)
		p := newExecProcs(t)
		p.noID = true
		// start sets p.env; the secret is added to it by wrapping env.
		p.wrap = []string{"env", docSecretEnv + "=doc-s3cret"}
		i := p.start("exit:0", "--config", doc, "--http", "")
		if code := p.exit(i, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		ls := readChildFile(t, p.file)
		if len(ls) != 1 || len(ls[0].rest) < 5 || ls[0].rest[4] != "<none>" {
			t.Fatalf("child wrote %+v: %s reached it", ls, docSecretEnv)
		}
	})
	t.Run("proc environ", func(t *testing.T) {
		t.Parallel()
		bin := binary
		var cred *syscall.Credential
		if os.Geteuid() == 0 {
			dir, err := os.MkdirTemp("", "exec-nobody-*")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			bin = filepath.Join(dir, "example-app")
			if err := copyFile(binary, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		}
		script := `if cat /proc/$PPID/environ >/dev/null 2>&1; then echo readable; else echo denied; fi`
		cmd := exec.Command(bin, append(append([]string{"exec"}, memoryExec...), "--", "/bin/sh", "-c", script)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "FXELECTION_ID=n", "FXELECTION_ADMIN=off", "FXELECTION_REDIS_PASSWORD=s3cretpw", "GORACE=atexit_sleep_ms=0"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		if err != nil {
			t.Fatalf("exec: %v; stderr:\n%s", err, stderr.String())
		}
		if got := strings.TrimSpace(stdout.String()); got != "denied" {
			t.Fatalf("the child's read of exec's /proc/PID/environ: %q, want denied", got)
		}
	})
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestExecOnFailureStopInBackoff: with --restart on-failure, SIGTERM while
// exec waits to restart a failed child (no child runs) exits 0, as the
// help says, not with the last child's code.
func TestExecOnFailureStopInBackoff(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	p := newExecProcs(t)
	i := p.start("exit:3", append([]string{"--restart", "on-failure"}, memoryExec...)...)
	// The sixth restart waits 3.2s (+ up to 20%): the signal arrives in it.
	const nth = 6
	idx := -1
	for range nth {
		_, idx = p.waitFor(idx+1, 60*time.Second, func(l logLine) bool { return l.Msg == "child restart" })
	}
	p.signal(i, syscall.SIGTERM)
	if code := p.exit(i, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0 (stopped with no child running)", code)
	}
	for _, l := range p.snapshot() {
		if l.Msg == "child signalled" {
			t.Fatalf("the signal reached a child (%+v): it was to arrive during the backoff", l)
		}
	}
}

// TestExecReadmeStatesContainmentLimits: next to its promises the README
// says where the kernel keeps exec from keeping them.
func TestExecReadmeStatesContainmentLimits(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Leader-only processes\n")
	if !ok {
		t.Fatal("README has no Leader-only processes section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	section = strings.Join(strings.Fields(section), " ")
	for _, want := range []string{
		"every process the child starts, also one that leaves its process group",
		"the next leadership's child starts only once every process of the previous child's tree is gone",
		"A child that changes its uid (setpriv, gosu, su-exec, sudo -u, a set-uid program) loses the parent-death signal",
		"processes the child left behind are re-parented to the host's init and live on",
		"SIGTSTP, SIGTTIN and SIGTTOU (Ctrl-Z) are ignored",
		"exit_on_loss",
		"not dumpable",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the README's exec section does not say %q", want)
		}
	}
	if strings.Contains(section, `--postgres-dsn "`) || strings.Contains(section, "--redis-password ") {
		t.Error("an example passes a secret on the command line")
	}
}
