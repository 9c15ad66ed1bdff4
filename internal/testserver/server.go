package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// server is the lifecycle every test server shares: a child process on a
// fixed loopback port with a temporary directory, stopped, killed,
// restarted and closed under one lock. Every server type embeds it and
// supplies launch.
type server struct {
	name    string         // for errors and file names: "redis", "postgres"
	stopSig syscall.Signal // graceful stop
	dir     string
	launch  func(port int) (*process, error) // start on port, wait until ready

	mu     sync.Mutex
	port   int
	proc   *process // nil when not running
	closed bool
}

// create makes the server's temporary directory and starts the server for
// the first time (see open); a failed attempt's log is removed before a
// retry, after beforeRetry (if set) has run.
func (s *server) create(port int, beforeRetry func()) error {
	dir, err := os.MkdirTemp("", "fxelection-"+s.name+"-*")
	if err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	s.dir = dir
	return s.open(port, func() {
		if beforeRetry != nil {
			beforeRetry()
		}
		_ = os.Remove(s.logPath())
	})
}

// logPath is the server's log: NAME.log in its directory.
func (s *server) logPath() string { return filepath.Join(s.dir, s.name+".log") }

// run starts cmd in the server's directory, as cred if not nil, with its
// output in the server's log, and waits up to timeout until ready succeeds
// for the address 127.0.0.1:port (see launch).
func (s *server) run(cmd *exec.Cmd, port int, cred *syscall.Credential, timeout time.Duration, ready func(addr string) error) (*process, error) {
	cmd.Dir = s.dir
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return launch(cmd, s.logPath(), cred, timeout, func() error { return ready(addr) })
}

// lookPath finds the server binary bin on PATH, or returns an error
// wrapping ErrNotInstalled with the install command.
func lookPath(name, bin, install string) (string, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("start %s: %w: %v (install it with: %s)", name, ErrNotInstalled, err, install)
	}
	return path, nil
}

// dial connects to addr for a readiness check (within a second), with
// every read and write on the connection due within d.
func dial(addr string, d time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(d)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// open starts the server for the first time: on port, or on a free port
// with a few retries (another process may take a free port meanwhile).
// On failure it removes the directory.
func (s *server) open(port int, beforeRetry func()) error {
	attempts := 1
	if port == 0 {
		attempts = startAttempts
	}
	var err error
	for i := range attempts {
		s.port = port
		if s.port == 0 {
			if s.port, err = FreePort(); err != nil {
				break
			}
		}
		if s.proc, err = s.launch(s.port); err == nil {
			return nil
		}
		if i < attempts-1 && beforeRetry != nil {
			beforeRetry()
		}
	}
	_ = os.RemoveAll(s.dir)
	return fmt.Errorf("start %s: %w", s.name, err)
}

// Addr returns the server address, "127.0.0.1:PORT". It stays the same
// across Restart.
func (s *server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Stop shuts the server down gracefully (Redis: SIGTERM; Postgres: SIGINT,
// a fast shutdown) and waits for it to exit. It does nothing if the server
// is not running.
func (s *server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	err := s.proc.stop(s.stopSig)
	s.proc = nil
	if err != nil {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	return nil
}

// Kill kills the server (for Postgres, the postmaster and all its children)
// with SIGKILL and waits until it is gone, simulating a crash. It does
// nothing if the server is not running.
func (s *server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	err := s.proc.kill()
	s.proc = nil
	if err != nil {
		return fmt.Errorf("kill %s: %w", s.name, err)
	}
	return nil
}

// Restart starts the server again on the same port and directory and waits
// until it is ready. A running server is stopped gracefully first.
func (s *server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("restart %s: closed", s.name)
	}
	if s.proc != nil {
		err := s.proc.stop(s.stopSig)
		s.proc = nil
		if err != nil {
			return fmt.Errorf("restart %s: %w", s.name, err)
		}
	}
	proc, err := s.launch(s.port)
	if err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	s.proc = proc
	return nil
}

// Close kills the server if it is running and removes its directory.
// It is safe to call more than once.
func (s *server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.proc != nil {
		errs = append(errs, s.proc.kill())
		s.proc = nil
	}
	errs = append(errs, os.RemoveAll(s.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", s.name, err)
	}
	return nil
}
