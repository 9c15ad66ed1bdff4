package testserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	// Cluster starts the server in cluster mode (--cluster-enabled yes).
	// The node owns no slots until a test assigns them (CLUSTER
	// ADDSLOTSRANGE 0 16383 makes a one-node cluster).
	Cluster bool
	// ReplicaOf, "host:port", starts the server as a replica of that
	// primary (--replicaof). See RedisPair for a primary and its replica.
	ReplicaOf string
}

// Redis is a redis-server child process listening on 127.0.0.1.
// Its methods are safe for concurrent use.
type Redis struct {
	*server
	bin  string
	opts RedisOptions
}

// StartRedis starts redis-server on a free loopback port (or opts.Port) in a
// new temporary directory and waits until it answers PING. The caller must
// call Close. It returns an error wrapping ErrNotInstalled when
// redis-server is not found.
func StartRedis(opts RedisOptions) (*Redis, error) {
	bin, err := lookPath("redis", "redis-server", "apt-get install redis-server")
	if err != nil {
		return nil, err
	}
	r := &Redis{bin: bin, opts: opts}
	r.server = &server{name: "redis", stopSig: syscall.SIGTERM, launch: r.launch}
	if err := r.create(opts.Port, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// NewRedis starts a Redis server for the test and closes it in t.Cleanup.
// When redis-server is not installed the test is skipped, or fails if the
// environment variable CI is "true". Other startup errors fail the test.
func NewRedis(t testing.TB, opts RedisOptions) *Redis {
	t.Helper()
	r, err := StartRedis(opts)
	return forTest(t, r, err)
}

// launch starts redis-server on port and waits for PING.
func (r *Redis) launch(port int) (*process, error) {
	appendOnly := "no"
	if r.opts.AppendOnly {
		appendOnly = "yes"
	}
	cmd := exec.Command(r.bin,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--dir", r.dir,
		"--save", "",
		"--appendonly", appendOnly,
		"--daemonize", "no",
		"--protected-mode", "no",
		"--repl-diskless-sync-delay", "0", // a replica (RedisPair) syncs at once, not after 5 s
	)
	if r.opts.ReplicaOf != "" {
		host, port, err := net.SplitHostPort(r.opts.ReplicaOf)
		if err != nil {
			return nil, fmt.Errorf("replicaof: %w", err)
		}
		cmd.Args = append(cmd.Args, "--replicaof", host, port)
	}
	if r.opts.Cluster {
		cmd.Args = append(cmd.Args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(r.dir, "nodes.conf"))
	}
	return r.run(cmd, port, nil, redisReadyTimeout, func(addr string) error { return redisReady(addr, cmd.Process.Pid) })
}

// redisReady checks that the server at addr answers PING with +PONG and is
// the process with the given pid, not some other server that took the port.
func redisReady(addr string, pid int) error {
	conn, err := dial(addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
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
