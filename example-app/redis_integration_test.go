package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// logLine is one JSON log line of an example-app process.
type logLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Election string    `json:"election"`
	Identity string    `json:"identity"`
	Leader   string    `json:"leader"`
	Term     uint64    `json:"term"`
	Reason   string    `json:"reason"`
	Op       string    `json:"op"`
	// exec's
	Pid    int    `json:"pid"`
	Code   int    `json:"code"`
	Signal string `json:"signal"`

	proc int
	at   time.Time
}

// procs runs example-app processes, each in its own process group (which
// cleanup kills), and collects their log lines in the order they arrive.
type procs struct {
	t     *testing.T
	mu    sync.Mutex
	lines []logLine
	cmds  []*exec.Cmd
	eof   []chan struct{} // closed when a process's stdout ends
	// noID leaves FXELECTION_ID unset (--config processes: the identity
	// is in the file); env is added to every process's environment.
	noID bool
	env  []string
	// stderr reads the log from stderr (exec's) instead of stdout.
	stderr bool
	// wrap runs every process under this command (given its arguments,
	// then the program's).
	wrap []string
}

func (p *procs) start(args ...string) int {
	p.t.Helper()
	i := len(p.cmds)
	argv := append(append(append([]string(nil), p.wrap...), binary), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	// No admin endpoint unless a test asks (--admin, or p.env): its
	// default address is one per machine.
	cmd.Env = append(append(os.Environ(), "FXELECTION_ADMIN=off"), p.env...)
	if !p.noID {
		cmd.Env = append(cmd.Env, "FXELECTION_ID="+fmt.Sprintf("proc-%d", i))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out io.Reader
	var err error
	if p.stderr {
		out, err = cmd.StderrPipe()
		cmd.Stdout = io.Discard
	} else {
		out, err = cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	eof := make(chan struct{})
	p.cmds, p.eof = append(p.cmds, cmd), append(p.eof, eof)
	go func() {
		defer close(eof)
		p.read(i, out)
	}()
	p.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-eof // read everything before Wait closes the pipe
		_ = cmd.Wait()
	})
	return i
}

func (p *procs) read(i int, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			p.t.Errorf("process %d wrote a non-JSON line: %q", i, sc.Text())
			continue
		}
		l.proc, l.at = i, time.Now()
		p.mu.Lock()
		p.lines = append(p.lines, l)
		p.mu.Unlock()
	}
}

// Bounds of the process tests against the wall clock, for a machine with
// its cores oversubscribed.
const (
	// waitFloor is the least time a wait for something that must happen
	// (a log line, a child's lines, an exit) gives it: a wait ends as
	// soon as what it waits for holds, so the floor only decides how long
	// a broken run takes to fail, and a busy machine never fails a wait
	// the protocol bounds (a lease, a retry, a stop timeout) far below it.
	waitFloor = time.Minute
	// busySlack is added to each latency a test asserts (a failover, a
	// hand-over) beyond the protocol's bound.
	busySlack = 10 * time.Second
)

// waitFor returns the first line from index from on that matches, waiting
// up to limit, or waitFloor if longer.
func (p *procs) waitFor(from int, limit time.Duration, match func(logLine) bool) (logLine, int) {
	p.t.Helper()
	limit = max(limit, waitFloor)
	deadline := time.Now().Add(limit)
	for {
		p.mu.Lock()
		for j := from; j < len(p.lines); j++ {
			if match(p.lines[j]) {
				l := p.lines[j]
				p.mu.Unlock()
				return l, j
			}
		}
		n := len(p.lines)
		p.mu.Unlock()
		if time.Now().After(deadline) {
			p.t.Fatalf("no matching log line within %v (%d lines so far)", limit, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *procs) snapshot() []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]logLine(nil), p.lines...)
}

// failover runs three processes with backend (the --backend flags) on
// election "it" with lease and retry: a leader is elected and works;
// SIGKILL fails over once the lease expired (within lease + slack + 1.2 ×
// retry, plus busySlack) and the new leader works; SIGTERM hands over to
// the last process within handover (plus busySlack), and the stopped
// process exits 0. It returns the three leaders' "leadership acquired"
// lines.
func (p *procs) failover(backend []string, lease, retry, slack, handover time.Duration) (first, second, third logLine) {
	t := p.t
	t.Helper()
	args := append(append([]string(nil), backend...), "--election", "it", "--log-format", "json",
		"--lease", lease.String(), "--renew-deadline", "2s", "--retry", retry.String(), "--work-interval", "100ms", "--http", "")
	for range 3 {
		p.start(args...)
	}
	acquired := func(after uint64) func(logLine) bool {
		return func(l logLine) bool { return l.Msg == "leadership acquired" && l.Term > after }
	}
	first, idx := p.waitFor(0, 30*time.Second, acquired(0))
	p.waitFor(idx, 10*time.Second, func(l logLine) bool { return l.Msg == "leader work" && l.proc == first.proc })

	// SIGKILL: nothing is released; another process takes over once the
	// lease expires, within lease + retry (plus slack for a busy machine).
	killed := time.Now()
	if err := p.cmds[first.proc].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second, idx = p.waitFor(idx, lease+slack+2*retry+10*time.Second, acquired(first.Term))
	if took := second.at.Sub(killed); took > lease+slack+time.Duration(1.2*float64(retry))+busySlack {
		t.Errorf("failover after SIGKILL took %v", took)
	} else {
		t.Logf("failover after SIGKILL: %v (lease %v, retry %v)", took, lease, retry)
	}
	if second.proc == first.proc {
		t.Fatal("the killed process led again")
	}
	p.waitFor(idx, 10*time.Second, func(l logLine) bool { return l.Msg == "leader work" && l.proc == second.proc })

	// SIGTERM: graceful stop releases; the last process leads at once.
	termed := time.Now()
	if err := p.cmds[second.proc].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	third, _ = p.waitFor(idx, 10*time.Second, acquired(second.Term))
	if took := third.at.Sub(termed); took > handover+busySlack {
		t.Errorf("hand-over after SIGTERM took %v, want within %v (+%v)", took, handover, busySlack)
	} else {
		t.Logf("hand-over after SIGTERM: %v", took)
	}
	select {
	case <-p.eof[second.proc]:
	case <-time.After(15 * time.Second):
		t.Fatal("SIGTERM'd process did not exit within its stop timeout")
	}
	if err := p.cmds[second.proc].Wait(); err != nil {
		t.Fatalf("SIGTERM'd process: %v, want exit 0", err)
	}
	return first, second, third
}

// checkWorkTerms checks, after half a second for the logs to settle, that
// no leader work of an older term followed work of a newer one, and that
// the newest work is of term last.
func (p *procs) checkWorkTerms(last uint64) {
	t := p.t
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	var newest uint64
	for _, l := range p.snapshot() {
		if l.Msg != "leader work" {
			continue
		}
		if l.Term < newest {
			t.Fatalf("leader work of term %d (process %d) after work of term %d", l.Term, l.proc, newest)
		}
		newest = l.Term
	}
	if newest != last {
		t.Fatalf("newest leader work term %d, want %d", newest, last)
	}
}

func TestThreeProcessesOnRedis(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	const lease, retry = 3 * time.Second, 500 * time.Millisecond
	p := &procs{t: t}
	first, second, third := p.failover([]string{"--backend", "redis", "--redis-addr", srv.Addr()}, lease, retry, 0, time.Second)
	if first.Election != "it" || first.Identity != fmt.Sprintf("proc-%d", first.proc) {
		t.Fatalf("acquired line %+v", first)
	}
	lost, _ := p.waitFor(0, time.Second, func(l logLine) bool {
		return l.Msg == "leadership lost" && l.proc == second.proc
	})
	if lost.Reason != "stopped" || lost.Term != second.Term {
		t.Fatalf("lost line %+v", lost)
	}
	// No leader work from an old term once a newer term's work appeared
	// (checked once the logs settled).
	p.checkWorkTerms(third.Term)

	// Each leadership is logged once, by the process that held it.
	seen := map[string]bool{}
	for _, l := range p.snapshot() {
		if l.Msg != "leadership acquired" && l.Msg != "leadership lost" {
			continue
		}
		key := fmt.Sprintf("%s/%d/%d", l.Msg, l.proc, l.Term)
		if seen[key] {
			t.Fatalf("%q for term %d logged twice by process %d", l.Msg, l.Term, l.proc)
		}
		seen[key] = true
	}

	// "status" reads the leader from the store.
	out, err := exec.Command(binary, "status", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "it").CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, want := range []string{fmt.Sprintf("leader:   proc-%d", third.proc), fmt.Sprintf("term:     %d", third.Term), "expires:", "metadata: http="} {
		if !strings.Contains(string(out), want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(binary, "status", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "nobody").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `election "nobody" has no leader`) {
		t.Fatalf("status of an empty election: %v\n%s", err, out)
	}
}

// TestStatusEscapesHostileRecord writes lease records with escape
// sequences and forged lines in the holder and the metadata straight into
// Redis, then runs "status": nothing raw reaches the terminal, whether the
// backend rejects the record (exit 1, invalid record) or passes it on
// (status escapes it).
func TestStatusEscapesHostileRecord(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	record := func(holder, metadata string) string {
		return fmt.Sprintf("fxe2|5|%d|%s|0123456789abcdef|60000|0|%s", len(holder), holder, metadata)
	}
	for name, rec := range map[string]string{
		"holder":   record("evil\x1b[2J\nleader:   forged\r", `{"http":"x"}`),
		"metadata": record("node-1", `{"http":"x\nmetadata: admin=yes","k\u001b]0;title\u0007":"\u001b[31mred"}`),
		"utf8":     record("\xff\xfe\xfd", `{}`),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if err := client.Set(ctx, "fxelection:{hostile-"+name+"}:lease", rec, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, binary, "status", "--backend", "redis", "--redis-addr", srv.Addr(), "--election", "hostile-"+name)
			out, err := cmd.CombinedOutput()
			s := string(out)
			t.Logf("status: %v\n%s", err, s)
			if strings.ContainsAny(s, "\x1b\r\a") || strings.Contains(s, "\xff") {
				t.Fatalf("raw control bytes reached the terminal: %q", s)
			}
			for _, forged := range []string{"\nleader:   forged", "\nmetadata: admin=yes"} {
				if strings.Contains(s, forged) {
					t.Fatalf("forged line in %q", s)
				}
			}
			var ee *exec.ExitError
			switch {
			case err == nil:
				if !strings.Contains(s, "leader:   ") || !strings.Contains(s, "term:     5") {
					t.Fatalf("status output %q", s)
				}
			case errors.As(err, &ee) && ee.ExitCode() == 1:
				if !strings.Contains(s, "invalid") || strings.Count(s, "\n") != 1 {
					t.Fatalf("status failed with %q, want one line about an invalid record", s)
				}
			default:
				t.Fatalf("status: %v", err)
			}
		})
	}
}
