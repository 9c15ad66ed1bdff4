package testserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// replicaSyncTimeout bounds how long a (re)started replica may take to
// finish its initial synchronisation with its primary.
const replicaSyncTimeout = 30 * time.Second

// RedisPair is a Redis primary and its asynchronous replica (--replicaof),
// each a redis-server child without persistence on a loopback port of its
// own, as a user would run them behind Sentinel. Failover kills the primary
// and promotes the replica (REPLICAOF NO ONE); Rejoin starts the killed
// server again as the new primary's replica, so the two trade places and a
// test can fail over again. Its methods are safe for concurrent use, but
// Failover and Rejoin must alternate.
type RedisPair struct {
	mu      sync.Mutex
	primary *Redis
	replica *Redis
	down    bool // the replica slot holds the killed former primary, not yet rejoined
}

// StartRedisPair starts a primary and a replica of it and waits until the
// replica has synchronised. The caller must call Close.
func StartRedisPair() (*RedisPair, error) {
	primary, err := StartRedis(RedisOptions{})
	if err != nil {
		return nil, err
	}
	replica, err := StartRedis(RedisOptions{ReplicaOf: primary.Addr()})
	if err != nil {
		return nil, errors.Join(err, primary.Close())
	}
	if err := replica.waitReplicaSynced(replicaSyncTimeout); err != nil {
		return nil, errors.Join(err, replica.Close(), primary.Close())
	}
	return &RedisPair{primary: primary, replica: replica}, nil
}

// NewRedisPair starts a RedisPair for the test and closes it in t.Cleanup,
// skipping the test as NewRedis does when redis-server is missing.
func NewRedisPair(t testing.TB) *RedisPair {
	t.Helper()
	p, err := StartRedisPair()
	return forTest(t, p, err)
}

// Primary returns the server that currently takes writes.
func (p *RedisPair) Primary() *Redis {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.primary
}

// Replica returns the server that currently replicates the primary (or,
// between Failover and Rejoin, the killed former primary).
func (p *RedisPair) Replica() *Redis {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.replica
}

// Failover kills the primary with SIGKILL (writes it had acknowledged but
// not yet sent to the replica are lost, as in a real crash) and, pause
// later (a Sentinel's detection time), promotes the replica with
// REPLICAOF NO ONE. It returns the new primary; clients
// must be moved to its address. The killed server stays down until Rejoin.
func (p *RedisPair) Failover(pause time.Duration) (*Redis, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return nil, errors.New("redis failover: the replica has not rejoined since the last failover")
	}
	if err := p.primary.Kill(); err != nil {
		return nil, fmt.Errorf("redis failover: %w", err)
	}
	time.Sleep(pause)
	if err := p.replica.promote(); err != nil {
		return nil, fmt.Errorf("redis failover: %w", err)
	}
	p.primary, p.replica, p.down = p.replica, p.primary, true
	return p.primary, nil
}

// Rejoin starts the server killed by the last Failover again, on its own
// port and empty, as a replica of the new primary, and waits until it has
// synchronised.
func (p *RedisPair) Rejoin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down {
		return errors.New("redis rejoin: no failover to rejoin from")
	}
	if err := p.replica.restartAsReplica(p.primary.Addr()); err != nil {
		return fmt.Errorf("redis rejoin: %w", err)
	}
	p.down = false
	return nil
}

// Close kills both servers and removes their directories.
func (p *RedisPair) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.replica.Close(), p.primary.Close())
}

// promote turns a replica into a primary (REPLICAOF NO ONE); a later
// restart starts it as a primary too.
func (r *Redis) promote() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return errors.New("promote: server not running")
	}
	reply, err := redisCommand(net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)), "REPLICAOF", "NO", "ONE")
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if reply != "OK" {
		return fmt.Errorf("promote: REPLICAOF NO ONE: %s", reply)
	}
	r.opts.ReplicaOf = ""
	return nil
}

// restartAsReplica kills a running server, starts it again on its port as
// a replica of primary and waits for its initial synchronisation.
func (r *Redis) restartAsReplica(primary string) error {
	if err := r.Kill(); err != nil {
		return err
	}
	r.mu.Lock()
	r.opts.ReplicaOf = primary
	r.mu.Unlock()
	if err := r.Restart(); err != nil {
		return err
	}
	return r.waitReplicaSynced(replicaSyncTimeout)
}

// waitReplicaSynced waits until INFO replication reports the link to the
// primary up, which a replica reports once its initial sync has loaded.
func (r *Redis) waitReplicaSynced(timeout time.Duration) error {
	addr := r.Addr()
	deadline := time.Now().Add(timeout)
	for {
		info, err := redisCommand(addr, "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s not synchronised after %v (%v): %s", addr, timeout, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisCommand sends one command to the server at addr on a connection of
// its own and returns the reply: a simple string, an error as "-ERR …", an
// integer's digits or a bulk string's contents.
func redisCommand(addr string, args ...string) (string, error) {
	conn, err := dial(addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return "", err
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return line, nil
	case '$':
		size, err := strconv.Atoi(line[1:])
		if err != nil || size < 0 || size > 1<<20 {
			return "", fmt.Errorf("bad bulk reply %q", line)
		}
		body := make([]byte, size+2)
		if _, err := io.ReadFull(br, body); err != nil {
			return "", err
		}
		return string(body[:size]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}
