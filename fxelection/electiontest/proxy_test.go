package electiontest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer echoes every line back until the connection closes.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func newEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy(newEcho(t).ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, p *Proxy) *lineConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &lineConn{Conn: c, r: bufio.NewReader(c)}
}

// roundTrip sends msg and reads the echo within limit.
func (c *lineConn) roundTrip(msg string, limit time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(limit)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return line[:len(line)-1], nil
}

// read reads one line within limit.
func (c *lineConn) read(limit time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(limit)); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return line[:len(line)-1], nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestProxyForwards(t *testing.T) {
	p := newTestProxy(t)
	c := dial(t, p)
	for _, msg := range []string{"a", "bb", "ccc"} {
		got, err := c.roundTrip(msg, 5*time.Second)
		if err != nil || got != msg {
			t.Fatalf("round trip %q: %q, %v", msg, got, err)
		}
	}
	if p.Conns() != 1 {
		t.Fatalf("Conns = %d, want 1", p.Conns())
	}
}

// A partition stalls bytes both ways on current connections and delivers
// them, in order, on heal.
func TestProxyPartitionStallsAndDelivers(t *testing.T) {
	p := newTestProxy(t)
	c := dial(t, p)
	if _, err := c.roundTrip("warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Partition()
	if _, err := c.roundTrip("one", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("round trip while partitioned: %v, want a timeout", err)
	}
	_ = c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	p.Heal()
	for _, want := range []string{"one", "two"} {
		got, err := c.read(5 * time.Second)
		if err != nil || got != want {
			t.Fatalf("after heal: %q, %v; want %q", got, err, want)
		}
	}
}

// A partition stalls new connections too: they connect (the kernel
// accepts) but nothing is forwarded until heal.
func TestProxyPartitionStallsNewConnections(t *testing.T) {
	p := newTestProxy(t)
	p.Partition()
	c := dial(t, p)
	if _, err := c.roundTrip("new", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("round trip on a new connection while partitioned: %v, want a timeout", err)
	}
	p.Heal()
	if got, err := c.read(5 * time.Second); err != nil || got != "new" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
}

// Refuse resets new connections and leaves current ones alone.
func TestProxyRefuse(t *testing.T) {
	p := newTestProxy(t)
	old := dial(t, p)
	if _, err := old.roundTrip("warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Refuse()
	// The reset may come before the dial returns, or on the first read.
	if raw, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second); err == nil {
		c := &lineConn{Conn: raw, r: bufio.NewReader(raw)}
		_, err = c.roundTrip("x", 5*time.Second)
		_ = raw.Close()
		if err == nil || isTimeout(err) {
			t.Fatalf("round trip on a refused connection: %v, want a reset", err)
		}
	}
	if got, err := old.roundTrip("still", 5*time.Second); err != nil || got != "still" {
		t.Fatalf("current connection while refusing: %q, %v", got, err)
	}
	p.Heal()
	c := dial(t, p)
	if got, err := c.roundTrip("back", 5*time.Second); err != nil || got != "back" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
}

// Sever resets every current connection; new ones work.
func TestProxySever(t *testing.T) {
	p := newTestProxy(t)
	a, b := dial(t, p), dial(t, p)
	for _, c := range []*lineConn{a, b} {
		if _, err := c.roundTrip("warm", 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Sever(); n != 2 {
		t.Fatalf("Sever reset %d connections, want 2", n)
	}
	for _, c := range []*lineConn{a, b} {
		if _, err := c.read(5 * time.Second); err == nil || isTimeout(err) {
			t.Fatalf("read on a severed connection: %v, want a reset or EOF", err)
		}
	}
	c := dial(t, p)
	if got, err := c.roundTrip("new", 5*time.Second); err != nil || got != "new" {
		t.Fatalf("new connection after sever: %q, %v", got, err)
	}
}

// Sever during a partition drops the stalled bytes and frees the stalled
// goroutines.
func TestProxySeverWhilePartitioned(t *testing.T) {
	p := newTestProxy(t)
	c := dial(t, p)
	if _, err := c.roundTrip("warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Partition()
	if _, err := c.Write([]byte("lost\n")); err != nil {
		t.Fatal(err)
	}
	stalled := dial(t, p) // a new connection, stalled before its dial
	_ = stalled
	time.Sleep(50 * time.Millisecond)
	p.Sever()
	if _, err := c.read(5 * time.Second); err == nil || isTimeout(err) {
		t.Fatalf("read after sever: %v, want a reset or EOF", err)
	}
	p.Heal()
	deadline := time.Now().Add(5 * time.Second)
	for p.Conns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections left after sever", p.Conns())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Latency delays every chunk in each direction.
func TestProxyLatency(t *testing.T) {
	p := newTestProxy(t)
	c := dial(t, p)
	const lat = 100 * time.Millisecond
	p.SetLatency(lat)
	start := time.Now()
	if got, err := c.roundTrip("slow", 10*time.Second); err != nil || got != "slow" {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	if took := time.Since(start); took < 2*lat {
		t.Fatalf("round trip took %v with %v latency each way, want at least %v", took, lat, 2*lat)
	}
	p.Heal()
	if got, err := c.roundTrip("fast", 10*time.Second); err != nil || got != "fast" {
		t.Fatalf("round trip after heal: %q, %v", got, err)
	}
}

// Reply latency delays only what the target sends: a request reaches the
// target while its reply is held.
func TestProxyReplyLatency(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // answers one line
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return
		}
		close(arrived)
		_, _ = c.Write([]byte(line))
		_, _ = c.Read(make([]byte, 1)) // until the proxy closes
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	p, err := NewProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	p.SetReplyLatency(time.Hour)
	if _, err := c.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach the target within 10s")
	}
	if got, err := c.read(300 * time.Millisecond); !isTimeout(err) {
		t.Errorf("read with the reply held for an hour: %q, %v; want a timeout", got, err)
	}
	_ = p.Close()
}

// Close ends every goroutine (goleak checks in TestMain), resets the
// connections, including stalled ones, and is idempotent.
func TestProxyClose(t *testing.T) {
	p, err := NewProxy(newEcho(t).ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	if _, err := c.roundTrip("warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Partition()
	_ = dial(t, p)
	if _, err := c.Write([]byte("stalled\n")); err != nil {
		t.Fatal(err)
	}
	p.SetLatency(time.Hour)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.read(5 * time.Second); err == nil || isTimeout(err) {
		t.Fatalf("read after Close: %v, want a reset or EOF", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("dial after Close succeeded")
	}
}

// A target that is down: the client's connection is reset.
func TestProxyTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p, err := NewProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The reset may come before the dial returns, or on the first read.
	if c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second); err == nil {
		lc := &lineConn{Conn: c, r: bufio.NewReader(c)}
		_, err = lc.roundTrip("x", 5*time.Second)
		_ = c.Close()
		if err == nil || isTimeout(err) {
			t.Fatalf("round trip to a dead target: %v, want a reset or EOF", err)
		}
	}
	if _, err := NewProxy("no port"); err == nil {
		t.Fatal("NewProxy accepted a target without a port")
	}
}
