package testserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	redisReadyTimeout = 10 * time.Second
	startAttempts     = 5 // tries with a fresh port when Port is 0
)

// RedisOptions configures StartRedis and NewRedis.
type RedisOptions struct {
	// AppendOnly enables the append-only file (--appendonly yes), so data
	// survives Kill and Restart. By default persistence is off
	// (--appendonly no --save "") and a restarted server is empty.
	AppendOnly bool
	// Port is the TCP port to listen on; 0 picks a free one.
	Port int
}

// Redis is a redis-server child process listening on 127.0.0.1.
// Its methods are safe for concurrent use.
type Redis struct {
	bin  string
	dir  string
	opts RedisOptions

	mu     sync.Mutex
	port   int
	proc   *process // nil when not running
	closed bool
}

// StartRedis starts redis-server on a free loopback port (or opts.Port) in a
// new temporary directory and waits until it answers PING. The caller must
// call Close. It returns an error wrapping ErrNotInstalled when
// redis-server is not found.
func StartRedis(opts RedisOptions) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("start redis: %w: %v", ErrNotInstalled, err)
	}
	dir, err := os.MkdirTemp("", "fxelection-redis-*")
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	r := &Redis{bin: bin, dir: dir, opts: opts}
	attempts := 1
	if opts.Port == 0 {
		attempts = startAttempts
	}
	for i := range attempts {
		r.port = opts.Port
		if r.port == 0 {
			if r.port, err = FreePort(); err != nil {
				break
			}
		}
		if err = r.start(); err == nil {
			return r, nil
		}
		if i < attempts-1 {
			// Most likely the port was taken meanwhile; retry with another.
			_ = os.Remove(r.logPath())
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("start redis: %w", err)
}

// NewRedis starts a Redis server for the test and closes it in t.Cleanup.
// When redis-server is not installed the test is skipped, or fails if the
// environment variable CI is "true". Other startup errors fail the test.
func NewRedis(t testing.TB, opts RedisOptions) *Redis {
	t.Helper()
	r, err := StartRedis(opts)
	if err != nil {
		needServer(t, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close redis: %v", err)
		}
	})
	return r
}

// Addr returns the server address, "127.0.0.1:PORT". It stays the same
// across Restart.
func (r *Redis) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
}

// Stop shuts the server down gracefully (SIGTERM) and waits for it to exit.
// It does nothing if the server is not running.
func (r *Redis) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return nil
	}
	err := r.proc.stop(syscall.SIGTERM)
	r.proc = nil
	if err != nil {
		return fmt.Errorf("stop redis: %w", err)
	}
	return nil
}

// Kill kills the server with SIGKILL and waits for it to exit.
// It does nothing if the server is not running.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return nil
	}
	err := r.proc.kill()
	r.proc = nil
	if err != nil {
		return fmt.Errorf("kill redis: %w", err)
	}
	return nil
}

// Restart starts the server again on the same port and directory and waits
// until it answers PING. A running server is stopped gracefully first.
func (r *Redis) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("restart redis: closed")
	}
	if r.proc != nil {
		err := r.proc.stop(syscall.SIGTERM)
		r.proc = nil
		if err != nil {
			return fmt.Errorf("restart redis: %w", err)
		}
	}
	if err := r.start(); err != nil {
		return fmt.Errorf("restart redis: %w", err)
	}
	return nil
}

// Close kills the server if it is running and removes its directory.
// It is safe to call more than once.
func (r *Redis) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.proc != nil {
		errs = append(errs, r.proc.kill())
		r.proc = nil
	}
	errs = append(errs, os.RemoveAll(r.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close redis: %w", err)
	}
	return nil
}

func (r *Redis) logPath() string { return filepath.Join(r.dir, "redis.log") }

// start launches redis-server on r.port and waits for PING. r.mu must be held
// (or r not yet shared) and r.proc must be nil.
func (r *Redis) start() error {
	appendOnly := "no"
	if r.opts.AppendOnly {
		appendOnly = "yes"
	}
	cmd := exec.Command(r.bin,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(r.port),
		"--dir", r.dir,
		"--save", "",
		"--appendonly", appendOnly,
		"--daemonize", "no",
		"--protected-mode", "no",
	)
	cmd.Dir = r.dir
	proc, err := startProcess(cmd, r.logPath(), nil)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
	if err := waitReady(proc, redisReadyTimeout, func() error { return redisReady(addr, cmd.Process.Pid) }); err != nil {
		_ = proc.kill()
		return withLog(err, r.logPath())
	}
	r.proc = proc
	return nil
}

// redisReady checks that the server at addr answers PING with +PONG and is
// the process with the given pid, not some other server that took the port.
func redisReady(addr string, pid int) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\nINFO server\r\n")); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING: %s", line) // e.g. -LOADING while reading the AOF
	}
	line, err = br.ReadString('\n')
	if err != nil {
		return err
	}
	size, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "$"))
	if err != nil {
		return fmt.Errorf("INFO: %s", line)
	}
	info := make([]byte, size)
	if _, err := io.ReadFull(br, info); err != nil {
		return err
	}
	if want := "process_id:" + strconv.Itoa(pid) + "\r\n"; !strings.Contains(string(info), want) {
		return fmt.Errorf("another server answers on %s", addr)
	}
	return nil
}
