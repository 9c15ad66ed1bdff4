package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fxelection/fxelection/internal/testtier"
)

// The test child: this test binary run again with childModeEnv set (see
// TestMain). It appends to the file childFileEnv names, one write per
// line (O_APPEND: lines never interleave):
//
//	T term pid unix-nanos             every 10 ms while it runs
//	S term pid unix-nanos SIGNAME     on every signal it catches
//	E term pid unix-nanos ELECTION IDENTITY TERM SECRET DOCSECRET   once, at start
//
// Modes: "append" runs until SIGINT or SIGTERM, then exits 0; "ignore-term"
// runs until killed; "exit:N" exits N at once; "fail-until:K" exits 1 until
// the file has K E lines, then 0; "selfkill" kills itself with SIGKILL;
// "spawn:HOW:THEN" first starts another child in mode "append" (HOW
// "setsid": in a new session, a daemon; "group": in this process's group)
// and waits for its E line, then goes on in mode THEN ("exit" exits 0 at
// once).
const (
	childModeEnv = "EXEC_TEST_CHILD"
	childFileEnv = "EXEC_TEST_FILE"
	// docSecretEnv is a variable a document's {env.NAME} placeholder reads.
	docSecretEnv = "EXEC_TEST_DOC_SECRET"
)

// childMain is the test child's main.
func childMain(mode string) {
	f, err := os.OpenFile(os.Getenv(childFileEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(100)
	}
	term, pid := os.Getenv("FXELECTION_TERM"), os.Getpid()
	line := func(kind string, more ...string) {
		fields := append([]string{kind, term, strconv.Itoa(pid), strconv.FormatInt(time.Now().UnixNano(), 10)}, more...)
		_, _ = f.WriteString(strings.Join(fields, " ") + "\n")
	}
	orNone := func(name string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return "<none>"
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	if how, then, ok := strings.Cut(strings.TrimPrefix(mode, "spawn:"), ":"); ok && strings.HasPrefix(mode, "spawn:") {
		self, _ := os.Executable()
		c := exec.Command(self)
		c.Env = append(os.Environ(), childModeEnv+"=append")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: how == "setsid"}
		if err := c.Start(); err != nil {
			os.Exit(101)
		}
		// Ready once it has written its E line (as a daemon's launcher
		// waits for the daemon to be up).
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			raw, _ := os.ReadFile(os.Getenv(childFileEnv))
			if strings.Contains(string(raw), " "+strconv.Itoa(c.Process.Pid)+" ") || time.Now().After(deadline) {
				break
			}
		}
		mode = then
		if mode == "exit" {
			mode = "exit:0"
		}
	}
	line("E", orNone("FXELECTION_ELECTION"), orNone("FXELECTION_IDENTITY"), orNone("FXELECTION_TERM"), orNone("FXELECTION_REDIS_PASSWORD"), orNone(docSecretEnv))
	switch {
	case strings.HasPrefix(mode, "exit:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(mode, "exit:"))
		os.Exit(n)
	case strings.HasPrefix(mode, "fail-until:"):
		k, _ := strconv.Atoi(strings.TrimPrefix(mode, "fail-until:"))
		raw, _ := os.ReadFile(os.Getenv(childFileEnv))
		if strings.Count(string(raw), "E ") < k {
			os.Exit(1)
		}
		os.Exit(0)
	case mode == "selfkill":
		_ = syscall.Kill(pid, syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
	if mode == "fenced" {
		fencedChild(line, sigs) // exec_pause_test.go
		os.Exit(0)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	for {
		line("T")
		select {
		case sig := <-sigs:
			line("S", signalName(sig.(syscall.Signal)))
			if stopSignal(sig) && mode != "ignore-term" {
				os.Exit(0)
			}
		case <-tick.C:
		}
	}
}

// childLine is one line of the child's file.
type childLine struct {
	kind string
	term uint64
	pid  int
	at   time.Time
	rest []string
}

func readChildFile(t *testing.T, path string) []childLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []childLine
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		term, _ := strconv.ParseUint(f[1], 10, 64)
		pid, _ := strconv.Atoi(f[2])
		ns, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, childLine{f[0], term, pid, time.Unix(0, ns), f[4:]})
	}
	return out
}

// execProcs runs example-app exec processes (procs reading stderr) with
// the test child; cleanup also kills the process group of every child
// they started, and every test child that wrote to the file.
type execProcs struct {
	*procs
	file string // the children's file
}

func newExecProcs(t *testing.T) *execProcs {
	p := &execProcs{procs: &procs{t: t, stderr: true}, file: filepath.Join(t.TempDir(), "children.log")}
	t.Cleanup(func() {
		for _, l := range p.snapshot() {
			if l.Msg == "child started" {
				_ = syscall.Kill(-l.Pid, syscall.SIGKILL)
			}
		}
		for _, l := range readChildFile(t, p.file) {
			_ = syscall.Kill(l.pid, syscall.SIGKILL)
		}
	})
	return p
}

// start runs "example-app exec ARGS… -- <test child in mode>" and returns
// its index.
func (p *execProcs) start(mode string, args ...string) int {
	p.t.Helper()
	self, err := os.Executable()
	if err != nil {
		p.t.Fatal(err)
	}
	// The race detector's exit sleep (1s) would delay every child's exit.
	p.env = []string{childModeEnv + "=" + mode, childFileEnv + "=" + p.file, "FXELECTION_LOG_FORMAT=json", "GORACE=atexit_sleep_ms=0"}
	return p.procs.start(append(append([]string{"exec"}, args...), "--", self)...)
}

// waitLog returns the first log line matching, waiting up to limit, or
// waitFloor if longer.
func (p *execProcs) waitLog(limit time.Duration, match func(logLine) bool) logLine {
	p.t.Helper()
	l, _ := p.waitFor(0, limit, match)
	return l
}

// signal sends sig to process i.
func (p *execProcs) signal(i int, sig syscall.Signal) time.Time {
	p.t.Helper()
	at := time.Now()
	if err := p.cmds[i].Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	return at
}

// exit waits for process i to exit (up to limit, or waitFloor if longer)
// and returns its code.
func (p *execProcs) exit(i int, limit time.Duration) int {
	p.t.Helper()
	limit = max(limit, waitFloor)
	select {
	case <-p.eof[i]:
	case <-time.After(limit):
		p.t.Fatalf("process %d did not exit within %v", i, limit)
	}
	err := p.cmds[i].Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	p.t.Fatal(err)
	return -1
}

// waitLines waits until the children's file has a line matching, up to
// limit, or waitFloor if longer.
func (p *execProcs) waitLines(limit time.Duration, match func([]childLine) bool) []childLine {
	p.t.Helper()
	limit = max(limit, waitFloor)
	deadline := time.Now().Add(limit)
	for {
		ls := readChildFile(p.t, p.file)
		if match(ls) {
			return ls
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the children's file did not show what was waited for within %v (%d lines)", limit, len(ls))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countKind(ls []childLine, kind string) int {
	n := 0
	for _, l := range ls {
		if l.kind == kind {
			n++
		}
	}
	return n
}

// memoryExec are the flags of one exec process on the in-memory backend
// with the tests' short timings.
var memoryExec = []string{"--backend", "memory", "--election", "it", "--http", "", "--lease", "2s", "--renew-deadline", "1.3s", "--retry", "300ms"}

// TestExecEnvAndExitCode: the child sees the three variables (the term the
// log reports) and none of the command's own FXELECTION_ settings; the
// command exits with the child's code, 128+N when signal N ended it.
func TestExecEnvAndExitCode(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	p := newExecProcs(t)
	i := p.start("exit:3", memoryExec...)
	if code := p.exit(i, 30*time.Second); code != 3 {
		t.Fatalf("exit code %d, want the child's 3", code)
	}
	acquired := p.waitLog(time.Second, func(l logLine) bool { return l.Msg == "leadership acquired" })
	ls := readChildFile(t, p.file)
	if len(ls) != 1 || ls[0].kind != "E" {
		t.Fatalf("child wrote %+v, want one E line", ls)
	}
	if got, want := ls[0].rest, []string{"it", "proc-0", strconv.FormatUint(acquired.Term, 10), "<none>", "<none>"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("child's environment %q, want %q", got, want)
	}

	// The secret set for the command must not reach the child.
	q := newExecProcs(t)
	self, _ := os.Executable()
	cmd := exec.Command(binary, append(append([]string{"exec"}, memoryExec...), "--", self)...)
	cmd.Env = append(os.Environ(), childModeEnv+"=selfkill", childFileEnv+"="+q.file, "FXELECTION_REDIS_PASSWORD=s3cretpw", "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("child killed by SIGKILL: %v, want exit code %d; stderr:\n%s", err, 128+int(syscall.SIGKILL), stderr.String())
	}
	ls = readChildFile(t, q.file)
	if len(ls) != 1 || ls[0].rest[3] != "<none>" {
		t.Fatalf("child wrote %+v: the command's FXELECTION_REDIS_PASSWORD reached it", ls)
	}
	if strings.Contains(stderr.String(), "s3cretpw") {
		t.Fatal("the log shows the password")
	}
}

// TestExecRestartPolicies: never exits with the child's first code;
// on-failure restarts after failures and exits 0 after a success; always
// restarts after a success too, until a signal stops the command.
func TestExecRestartPolicies(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	t.Run("never", func(t *testing.T) {
		t.Parallel()
		p := newExecProcs(t)
		i := p.start("exit:5", append([]string{"--restart", "never"}, memoryExec...)...)
		if code := p.exit(i, 30*time.Second); code != 5 {
			t.Fatalf("exit code %d, want 5", code)
		}
		if n := countKind(readChildFile(t, p.file), "E"); n != 1 {
			t.Fatalf("child ran %d times, want once", n)
		}
	})
	t.Run("on-failure", func(t *testing.T) {
		t.Parallel()
		p := newExecProcs(t)
		began := time.Now()
		i := p.start("fail-until:3", append([]string{"--restart", "on-failure"}, memoryExec...)...)
		if code := p.exit(i, 60*time.Second); code != 0 {
			t.Fatalf("exit code %d, want 0 after the third run succeeded", code)
		}
		if n := countKind(readChildFile(t, p.file), "E"); n != 3 {
			t.Fatalf("child ran %d times, want 3", n)
		}
		restarts := 0
		for _, l := range p.snapshot() {
			if l.Msg == "child restart" {
				restarts++
			}
		}
		if restarts != 2 {
			t.Fatalf("%d restarts logged, want 2", restarts)
		}
		t.Logf("three runs with two restarts (backoff %v, then about %v) in %v", restartBackoffBase, 2*restartBackoffBase, time.Since(began))
	})
	t.Run("always", func(t *testing.T) {
		t.Parallel()
		p := newExecProcs(t)
		i := p.start("exit:0", append([]string{"--restart", "always"}, memoryExec...)...)
		p.waitLines(60*time.Second, func(ls []childLine) bool { return countKind(ls, "E") >= 3 })
		p.signal(i, syscall.SIGTERM)
		if code := p.exit(i, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d, want 0 (the last child's)", code)
		}
	})
}

// TestExecSignals: signals to the command reach the child; SIGINT stops
// both, and the command exits with the child's code.
func TestExecSignals(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	p := newExecProcs(t)
	i := p.start("append", memoryExec...)
	p.waitLog(30*time.Second, func(l logLine) bool { return l.Msg == "child started" })
	p.waitLines(30*time.Second, func(ls []childLine) bool { return countKind(ls, "T") > 0 })
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGQUIT, syscall.SIGINT} {
		p.signal(i, sig)
		name := signalName(sig)
		p.waitLines(10*time.Second, func(ls []childLine) bool {
			for _, l := range ls {
				if l.kind == "S" && l.rest[0] == name {
					return true
				}
			}
			return false
		})
	}
	if code := p.exit(i, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d, want the child's 0", code)
	}
	ls := readChildFile(t, p.file)
	if last := ls[len(ls)-1]; last.kind != "S" || last.rest[0] != "SIGINT" {
		t.Fatalf("child's last line %+v, want its SIGINT", last)
	}
}

// TestExecKillAfter: a child that ignores SIGTERM is killed --kill-after
// after the command's SIGTERM, and the command exits 137.
func TestExecKillAfter(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	const killAfter = 500 * time.Millisecond
	p := newExecProcs(t)
	i := p.start("ignore-term", append([]string{"--kill-after", killAfter.String()}, memoryExec...)...)
	p.waitLines(30*time.Second, func(ls []childLine) bool { return countKind(ls, "T") > 0 })
	sent := p.signal(i, syscall.SIGTERM)
	if code := p.exit(i, 30*time.Second); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want 137", code)
	}
	ls := readChildFile(t, p.file)
	var termAt, last time.Time
	for _, l := range ls {
		switch {
		case l.kind == "S" && l.rest[0] == "SIGTERM":
			termAt = l.at
		case l.kind == "T":
			last = l.at
		}
	}
	if termAt.IsZero() {
		t.Fatal("the child never got SIGTERM")
	}
	if ran := last.Sub(termAt); ran < killAfter-50*time.Millisecond {
		t.Fatalf("the child's last append came %v after SIGTERM, want about --kill-after (%v)", ran, killAfter)
	}
	t.Logf("SIGTERM to the command → child's SIGTERM %v, → its last append %v (--kill-after %v)", termAt.Sub(sent), last.Sub(sent), killAfter)
}

// TestExecUsage: bad exec input exits 2 with one line naming the flag.
func TestExecUsage(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(doc, []byte(`{"elections": [
		{"name": "a", "backend": {"module": "fxelection.backends.memory"}},
		{"name": "b", "lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms", "backend": {"module": "fxelection.backends.memory"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"kill-after too long", []string{"exec", "--backend", "memory", "--kill-after", "5s", "--", "true"}, "--kill-after (5s) must be at most 4.5s"},
		{"kill-after beyond the stop timeout", []string{"exec", "--backend", "memory", "--stop-timeout", "1s", "--", "true"}, "must be at most the stop timeout (1s)"},
		{"health-interval without health-cmd", []string{"--backend", "memory", "--health-interval", "1s"}, "--health-interval works only with --health-cmd"},
		{"health-cmd in the demo", []string{"--health-cmd", "true"}, "--health-cmd works only when campaigning"},
		{"health-cmd with a document", []string{"exec", "--config", doc, "--election", "b", "--health-cmd", "true", "--", "true"}, "--health-cmd conflicts with --config"},
		{"kill-after too long for short leases", append(append([]string{"exec"}, memoryExec...), "--kill-after", "650ms", "--", "true"), "--kill-after (650ms) must be at most 600ms"},
		{"kill-after too long in a document", []string{"exec", "--config", doc, "--election", "b", "--kill-after", "1s", "--", "true"}, "--kill-after (1s) must be at most 600ms"},
		{"no room to stop", []string{"exec", "--backend", "memory", "--lease", "1s", "--renew-deadline", "950ms", "--retry", "100ms", "--", "true"}, "--lease − --renew-deadline (50ms) must be more than 100ms"},
		{"missing --", []string{"exec", "--backend", "memory", "true"}, "put -- before the command"},
		{"missing command", []string{"exec", "--backend", "memory", "--"}, "needs a command after --"},
		{"no backend", []string{"exec", "--", "true"}, "--backend or --config is required for exec"},
		{"bad restart", []string{"exec", "--backend", "memory", "--restart", "sometimes", "--", "true"}, "--restart"},
		{"kill-after without exec", []string{"--backend", "memory", "--kill-after", "1s"}, "--kill-after works only with exec"},
		{"work interval", []string{"exec", "--backend", "memory", "--work-interval", "1s", "--", "true"}, "--work-interval does not work with exec"},
		{"document without --election", []string{"exec", "--config", doc, "--", "true"}, "--election is required for exec"},
		{"document without that election", []string{"exec", "--config", doc, "--election", "c", "--", "true"}, "--election: "},
		{"no such command", []string{"exec", "--backend", "memory", "--", "/nonexistent/cmd"}, "exec: \"/nonexistent/cmd\" is not a command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(binary, tt.args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want code 2; stderr %q", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) || stdout.Len() != 0 {
				t.Fatalf("stdout %q, stderr %q: want one line with %q", stdout.String(), stderr.String(), tt.want)
			}
		})
	}
}

// TestExecConfigElection: exec --config runs the document's election
// --election names, alone.
func TestExecConfigElection(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(doc, []byte(`{"backends": {"mem": {"module": "fxelection.backends.memory"}}, "elections": [
		{"name": "a", "backend": "mem"},
		{"name": "b", "identity": "file-id", "lease_duration": "2s", "renew_deadline": "1.3s", "retry_period": "300ms", "backend": "mem"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newExecProcs(t)
	p.noID = true
	i := p.start("exit:4", "--config", doc, "--election", "b", "--http", "")
	if code := p.exit(i, 30*time.Second); code != 4 {
		t.Fatalf("exit code %d, want 4", code)
	}
	ls := readChildFile(t, p.file)
	if len(ls) != 1 || ls[0].rest[0] != "b" || ls[0].rest[1] != "file-id" {
		t.Fatalf("child wrote %+v, want election b, identity file-id", ls)
	}
	for _, l := range p.snapshot() {
		if l.Msg == "leadership acquired" && l.Identity != "file-id" {
			t.Fatalf("another election ran: %+v", l)
		}
	}
}

// TestExecHelpStatesTheRules: exec's help states the figures the code
// uses.
func TestExecHelpStatesTheRules(t *testing.T) {
	limit, margin := killAfterLimit(15*time.Second, 10*time.Second)
	got := helpOf(t, "help", "exec")
	for _, want := range []string{
		fmt.Sprintf("%v with the defaults (15s, 10s)", limit),
		fmt.Sprintf("a margin of 10%% of it (at least %v)", minKillMargin),
		fmt.Sprintf("Restarts wait %v, doubling per exit in a row up to %v", restartBackoffBase, restartBackoffMax),
		fmt.Sprintf("%d when it could not start", startFailedCode),
		"FXELECTION_ELECTION, FXELECTION_IDENTITY and FXELECTION_TERM",
		"No -n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("help exec does not say %q", want)
		}
	}
	if margin != 500*time.Millisecond || limit != 4500*time.Millisecond {
		t.Errorf("killAfterLimit(15s, 10s) = %v, %v", limit, margin)
	}
	if l, m := killAfterLimit(2*time.Second, 1300*time.Millisecond); l != 600*time.Millisecond || m != minKillMargin {
		t.Errorf("killAfterLimit(2s, 1.3s) = %v, %v; want the 100ms floor", l, m)
	}
}

// interval is one child's appends (T lines): the first and the last.
type interval struct {
	pid         int
	term        uint64
	first, last time.Time
}

// childIntervals are the children's intervals, by first append.
func childIntervals(ls []childLine) []interval {
	byPid := map[int]*interval{}
	for _, l := range ls {
		if l.kind != "T" {
			continue
		}
		iv := byPid[l.pid]
		if iv == nil {
			iv = &interval{pid: l.pid, term: l.term, first: l.at, last: l.at}
			byPid[l.pid] = iv
		}
		iv.last = l.at
	}
	out := make([]interval, 0, len(byPid))
	for _, iv := range byPid {
		out = append(out, *iv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first.Before(out[j].first) })
	return out
}

// TestSidecarManifest: the Kubernetes recipe the README shows
// (examples/exec/sidecar.yaml) runs a valid exec command line, with its
// environment, and probes /readyz and /healthz on the --http port.
func TestSidecarManifest(t *testing.T) {
	raw, err := os.ReadFile("../examples/exec/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	var m struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Command []string `yaml:"command"`
						Args    []string `yaml:"args"`
						Env     []struct {
							Name string `yaml:"name"`
						} `yaml:"env"`
						Ports []struct {
							Name          string `yaml:"name"`
							ContainerPort int    `yaml:"containerPort"`
						} `yaml:"ports"`
						ReadinessProbe probe `yaml:"readinessProbe"`
						LivenessProbe  probe `yaml:"livenessProbe"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	c := m.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = "value-of-" + e.Name
	}
	o, err := parseArgs(c.Args, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the manifest's arguments: %v", err)
	}
	if !o.exec || o.id != env["FXELECTION_ID"] || o.redisPassword == "" || len(o.argv) == 0 || !strings.HasPrefix(o.argv[0], "/app/") {
		t.Fatalf("the manifest runs %+v", o)
	}
	_, port, _ := strings.Cut(o.httpAddr, ":")
	if len(c.Ports) != 1 || strconv.Itoa(c.Ports[0].ContainerPort) != port {
		t.Fatalf("ports %+v, want --http's %s", c.Ports, port)
	}
	for path, p := range map[string]probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if p.HTTPGet.Path != path || p.HTTPGet.Port != c.Ports[0].Name {
			t.Errorf("probe %+v, want %s on port %s", p.HTTPGet, path, c.Ports[0].Name)
		}
	}
}

// TestExecStartFailureExitsOne: a command whose app cannot start (here its
// HTTP address is taken) exits 1 and never runs the child.
func TestExecStartFailureExitsOne(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := filepath.Join(t.TempDir(), "children.log")
	self, _ := os.Executable()
	cmd := exec.Command(binary, append(append([]string{"exec"}, memoryExec...), "--http", ln.Addr().String(), "--", self)...)
	cmd.Env = append(os.Environ(), childModeEnv+"=exit:0", childFileEnv+"="+file)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "example-app: --http") {
		t.Fatalf("exit %v, want 1 naming --http; output:\n%s", err, out)
	}
	if ls := readChildFile(t, file); len(ls) != 0 {
		t.Fatalf("the child ran: %+v", ls)
	}
}
