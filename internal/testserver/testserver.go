// Package testserver starts real Redis, PostgreSQL, MinIO, Azurite, DynamoDB
// Local, memcached, NATS (JetStream), ZooKeeper and Kubernetes
// (kube-apiserver with its etcd) servers for tests.
//
// Each server runs as a child process on a free loopback port with its data
// in a private temporary directory. Servers can be stopped, killed and
// restarted on the same port and directory, which makes them suitable for
// fault-injection tests. Use NewRedis/NewPostgres in tests (they register
// cleanup and skip when the binary is missing) and StartRedis/StartPostgres
// in TestMain or benchmarks (the caller must call Close).
//
// Child processes run in their own process group and receive SIGKILL if the
// test binary dies, so an aborted test run does not leave servers behind.
package testserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/electiontesting"
)

// ErrNotInstalled is returned by StartRedis and StartPostgres when the server
// binary cannot be found.
var ErrNotInstalled = errors.New("testserver: server not installed (./scripts/test.sh installs every one)")

const (
	stopTimeout = 10 * time.Second // graceful stop before falling back to SIGKILL
	logTailSize = 4096             // bytes of server log included in errors
)

// FreePort returns a TCP port on 127.0.0.1 that was free when it was checked.
// Another process may take it before the caller binds it.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	return port, nil
}

// process is a running server child. Its waiter goroutine is owned by the
// process and ends when the child exits; done is closed at that point.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // result of cmd.Wait, valid after done is closed
}

// startProcess starts cmd in a new process group with its output appended to
// logPath. cred, if non-nil, sets the user the child runs as.
func startProcess(cmd *exec.Cmd, logPath string, cred *syscall.Credential) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy of the descriptor
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: cred,
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process and waits for it to exit. If it has not
// exited after stopTimeout, it is killed.
func (p *process) stop(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return p.kill()
	}
}

// kill kills the process and all its descendants with SIGKILL and waits
// until they are gone (or zombies, which hold no resources).
//
// Killing the process group is not enough: postgres backends call setsid.
// So the leader is stopped first, which keeps it from forking, then it and
// every descendant found in /proc are killed.
func (p *process) kill() error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGSTOP) // pidfd-based: safe against pid reuse
	victims := descendants(p.cmd.Process.Pid)
	for _, pid := range victims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // the rest of the group
	_ = p.cmd.Process.Kill()
	<-p.done
	deadline := time.Now().Add(stopTimeout)
	for _, pid := range victims {
		for alive(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d still alive after SIGKILL", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// procStat returns the state and parent pid of process pid from
// /proc/PID/stat.
func procStat(pid int) (state string, ppid int, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// Format: pid (comm) state ppid ...; comm may contain spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, err := procStat(pid)
	return err == nil && state != "Z"
}

// descendants returns the pids of process pid's children, grandchildren
// and so on.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, err := procStat(child); err == nil {
			children[ppid] = append(children[ppid], child)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// launch starts cmd (see startProcess) and waits until ready succeeds (see
// waitReady); if it never does, it kills the process and returns the error
// with the tail of the log. Every server's start ends here.
func launch(cmd *exec.Cmd, logPath string, cred *syscall.Credential, timeout time.Duration, ready func() error) (*process, error) {
	proc, err := startProcess(cmd, logPath, cred)
	if err != nil {
		return nil, err
	}
	if err := waitReady(proc, timeout, ready); err != nil {
		_ = proc.kill()
		return nil, withLog(err, logPath)
	}
	return proc, nil
}

// waitReady calls check until it succeeds, the process exits or timeout
// passes.
func waitReady(p *process, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("server exited: %v", p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", timeout, err)
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logTail returns the last logTailSize bytes of the file at path.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTailSize {
		_, _ = f.Seek(-logTailSize, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	return string(data)
}

// withLog adds the tail of the log at path to err.
func withLog(err error, path string) error {
	return fmt.Errorf("%w\n--- %s (tail) ---\n%s", err, filepath.Base(path), logTail(path))
}

// forTest is the tail of every NewX: it handles a startup error with
// Require and closes the server in t.Cleanup.
func forTest[S interface{ Close() error }](t testing.TB, srv S, err error) S {
	t.Helper()
	Require(t, err)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// Require fails t when a server could not start (err != nil): it skips
// with the install hint when the binary is missing, except under CI=true,
// where a missing server is a failure like any other. For packages that
// start one server in TestMain and check it from each test.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	t.Fatal(err)
}

// RunMain runs a package's tests, then calls closeServers (if not nil) to
// close the servers TestMain started, then checks for leaked goroutines,
// and returns the exit code for os.Exit. goleak.VerifyTestMain would check
// before the servers are closed and report their process waiters.
func RunMain(m *testing.M, closeServers func() error) int {
	code := m.Run()
	if closeServers != nil {
		if err := closeServers(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}

// WaitFor is electiontesting.WaitFor (one copy of the polling loop), kept
// here for tests that already call it through this package.
var WaitFor = electiontesting.WaitFor

// ClosedAddr returns "127.0.0.1:PORT" for a port nothing listened on when
// it was checked (see FreePort): the address of an unreachable store.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
