package testserver

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const memcachedReadyTimeout = 10 * time.Second

// MemcachedOptions configures StartMemcached and NewMemcached.
type MemcachedOptions struct {
	// MemoryMB is the item memory limit (-m) in megabytes; a small limit
	// lets a test make the server evict. Default: 64.
	MemoryMB int
	// Port is the TCP port to listen on; 0 picks a free one.
	Port int
}

// Memcached is a memcached child process listening on 127.0.0.1. It keeps
// nothing on disk: Kill and Restart give an empty cache. Its methods are
// safe for concurrent use.
type Memcached struct {
	*server
	bin  string
	opts MemcachedOptions
}

// StartMemcached starts memcached on a free loopback port (or opts.Port)
// and waits until it answers. The caller must call Close. It returns an
// error wrapping ErrNotInstalled when memcached is not found.
func StartMemcached(opts MemcachedOptions) (*Memcached, error) {
	bin, err := lookPath("memcached", "memcached", "apt-get install memcached")
	if err != nil {
		return nil, err
	}
	if opts.MemoryMB <= 0 {
		opts.MemoryMB = 64
	}
	m := &Memcached{bin: bin, opts: opts}
	m.server = &server{name: "memcached", stopSig: syscall.SIGTERM, launch: m.launch}
	if err := m.create(opts.Port, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// NewMemcached starts a memcached server for the test and closes it in
// t.Cleanup. When memcached is not installed the test is skipped, or fails
// if the environment variable CI is "true".
func NewMemcached(t testing.TB, opts MemcachedOptions) *Memcached {
	t.Helper()
	m, err := StartMemcached(opts)
	return forTest(t, m, err)
}

// launch starts memcached on port and waits until it answers "stats" with
// its own pid.
func (m *Memcached) launch(port int) (*process, error) {
	cmd := exec.Command(m.bin,
		"-l", "127.0.0.1",
		"-p", strconv.Itoa(port),
		"-U", "0", // no UDP
		"-m", strconv.Itoa(m.opts.MemoryMB),
		"-t", "2",
		"-c", "1024",
	)
	if os.Getuid() == 0 {
		cmd.Args = append(cmd.Args, "-u", "root") // memcached refuses root otherwise
	}
	return m.run(cmd, port, nil, memcachedReadyTimeout, func(addr string) error { return memcachedReady(addr, cmd.Process.Pid) })
}

// memcachedReady checks that the server at addr answers "stats" and is the
// process with the given pid.
func memcachedReady(addr string, pid int) error {
	conn, err := dial(addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		if line == "END" {
			return fmt.Errorf("stats without pid on %s", addr)
		}
		if v, ok := strings.CutPrefix(line, "STAT pid "); ok {
			if v != strconv.Itoa(pid) {
				return fmt.Errorf("another server answers on %s", addr)
			}
			return nil
		}
	}
}
