package etcdlease

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testtier"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

// chaosMember lets RunChaos stop and restart the embedded etcd member. The
// member runs inside the test binary, so "kill" is an in-process close of
// the member (its listeners, open client connections and Raft node), not
// SIGKILL of a process: what it wrote to its WAL is kept, as a real etcd
// keeps what it acknowledged.
type chaosMember struct {
	m *etcdtest.Member

	mu      sync.Mutex
	stopped chan struct{} // closed when the last Kill's Stop returned
}

// killWait bounds how long Kill waits for the member to stop. etcd's close
// drains client connections: open streams (watches) for up to its request
// timeout (6 s with the test cluster's 500 ms election timeout), and a
// connection that has not sent its first bytes yet (a proxy partitioned
// between its dial and the client's first bytes) until bytes come. RunChaos
// heals that partition from the goroutine that calls Kill, so waiting for
// it would deadlock: after killWait Kill returns (the member accepts
// nothing new by then) and Restart waits for the stop to finish.
const killWait = 8 * time.Second

func (c *chaosMember) Kill() error {
	done := make(chan struct{})
	c.mu.Lock()
	c.stopped = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		c.m.Stop()
	}()
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return nil
}

func (c *chaosMember) Restart() error {
	c.mu.Lock()
	done := c.stopped
	c.mu.Unlock()
	if done != nil {
		<-done
	}
	return c.m.Restart()
}

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on an embedded one-member etcd of its own: five candidates, each with its
// own etcd client behind its own fault-injecting proxy, partitions, latency,
// crashes, restarts, resignations, whole-cluster outages and stops and
// restarts of the etcd member (acknowledged writes survive, so no overlap is
// allowed). FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED make it a
// long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	c := etcdtest.Start(t, etcdtest.Options{})
	m := c.Members[0]
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: strings.TrimPrefix(m.Endpoint(), "http://"),
		Server: &chaosMember{m: m},
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			cl, err := clientv3.New(clientv3.Config{
				Endpoints:            []string{"http://" + addr},
				DialTimeout:          time.Second,
				DialKeepAliveTime:    time.Second,
				DialKeepAliveTimeout: time.Second,
				Logger:               zap.NewNop(),
			})
			if err != nil {
				return nil, nil, err
			}
			b, err := New(cl, Options{})
			if err != nil {
				_ = cl.Close()
				return nil, nil, err
			}
			return b, func() { _ = cl.Close() }, nil
		},
		Duration: 40 * time.Second,
		Seed:     7,
	})
}

// etcd's close waits for a client connection that has not sent its first
// bytes yet (its protocol sniffing reads with no deadline): chaosMember.Kill
// must return anyway, since RunChaos heals the stalled proxy holding such a
// connection from the goroutine that calls Kill, and Restart must wait for
// the stop and bring the member back.
func TestSoakChaosMemberKillWithSilentConnection(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	c := etcdtest.Start(t, etcdtest.Options{})
	m := c.Members[0]
	conn, err := net.Dial("tcp", strings.TrimPrefix(m.Endpoint(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// etcd accepts connections in order: once a later one is served, the
	// silent one has been accepted and etcd is waiting for its bytes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := etcdtest.NewClient(t, m.Endpoint())
	if _, err := cl.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	cm := &chaosMember{m: m}
	if err := cm.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cm.stopped:
		t.Fatal("the member stopped with a silent connection open: Kill's wait is no longer needed, or the test no longer shows it")
	default:
	}
	_ = conn.Close()
	if err := cm.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
}
