package electiontest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// proxyDialTimeout bounds the proxy's dial to its target.
const proxyDialTimeout = 5 * time.Second

// Proxy is a fault-injecting TCP proxy between one client and a store: it
// listens on a free loopback port (Addr) and forwards every connection to
// its target. Point a client at Addr, then cut it off from the store as a
// network would:
//
//   - Partition stalls every byte in both directions, on current and new
//     connections (a new connection is accepted but not forwarded); Heal
//     delivers what was stalled, in order, as TCP would after a transient
//     outage. A client that gave up meanwhile may still have its request
//     delivered late, as with real TCP.
//   - Refuse resets new connections at once (a host that is up but rejects
//     connections); current connections carry on.
//   - Sever resets every current connection at once, on both sides, as a
//     crashed host or a restarted middlebox would; new ones are forwarded
//     (unless partitioned or refused).
//   - SetLatency delays every chunk of bytes by d in each direction;
//     SetReplyLatency delays only what the store sends back (a request is
//     applied at once, its reply comes late).
//
// Heal ends a partition and refusal and removes the latency. A Proxy is safe
// for concurrent use; Close stops its goroutines and closes every
// connection, dropping stalled bytes.
type Proxy struct {
	target string
	ln     net.Listener
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu      sync.Mutex
	gate    chan struct{} // non-nil while partitioned; closed by Heal
	refuse  bool
	latency time.Duration
	replies time.Duration // added to latency from the target to the client
	conns   map[*proxyConn]struct{}
	closed  bool
}

// proxyConn is one client connection and, once dialled, its upstream.
type proxyConn struct {
	client net.Conn
	done   chan struct{} // closed when the pair is torn down

	mu       sync.Mutex
	upstream net.Conn // nil until dialled
	torn     bool
}

// reset closes both sides; with rst it sends a TCP reset instead of a FIN.
func (c *proxyConn) reset(rst bool) {
	c.mu.Lock()
	if c.torn {
		c.mu.Unlock()
		return
	}
	c.torn = true
	close(c.done)
	conns := []net.Conn{c.client, c.upstream}
	c.mu.Unlock()
	for _, conn := range conns {
		if conn != nil {
			closeConn(conn, rst)
		}
	}
}

// setUpstream attaches up, or resets it and reports false if the pair was
// torn down meanwhile.
func (c *proxyConn) setUpstream(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.torn {
		closeConn(up, true)
		return false
	}
	c.upstream = up
	return true
}

// closeConn closes conn; with rst it sends a TCP reset instead of a FIN.
func closeConn(conn net.Conn, rst bool) {
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// NewProxy starts a proxy on a free 127.0.0.1 port forwarding to target
// ("host:port"). The caller must call Close.
func NewProxy(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("electiontest: proxy target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("electiontest: proxy listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, done: make(chan struct{}), conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients should use, "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Partition stalls all traffic, in both directions and on new connections,
// until Heal. Calling it while partitioned does nothing.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate == nil && !p.closed {
		p.gate = make(chan struct{})
	}
}

// Refuse makes the proxy reset new connections at once, until Heal.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
}

// SetLatency delays every chunk forwarded in either direction by d
// (0 removes the delay).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// SetReplyLatency delays every chunk forwarded from the target to the
// client by d on top of SetLatency's (0 removes it): requests reach the
// store at once, their replies come late.
func (p *Proxy) SetReplyLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replies = max(d, 0)
}

// Sever resets every current connection (both sides) and returns how many
// it reset. Bytes stalled on them are dropped.
func (p *Proxy) Sever() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.reset(true)
	}
	return len(conns)
}

// Heal ends a partition (stalled bytes flow on, in order), stops refusing
// connections and removes the latencies (chunks already being delayed
// keep their delay).
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	p.refuse = false
	p.latency, p.replies = 0, 0
}

// Conns returns how many connections the proxy holds now.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, resets every connection (dropping stalled bytes)
// and waits for the proxy's goroutines to end. It is safe to call more
// than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	err := p.ln.Close()
	p.Sever()
	p.wg.Wait()
	return err
}

// wait blocks while the proxy is partitioned; it returns false if c was
// torn down or the proxy closed meanwhile.
func (p *Proxy) wait(c *proxyConn) bool {
	for {
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		if gate == nil {
			select {
			case <-c.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-gate:
		case <-c.done:
			return false
		}
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		c := &proxyConn{client: conn, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed || p.refuse {
			p.mu.Unlock()
			c.reset(true)
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// serve dials the target once the proxy is not partitioned, then pumps
// both directions until either side closes or the pair is reset.
func (p *Proxy) serve(c *proxyConn) {
	defer p.wg.Done()
	defer func() {
		c.reset(false)
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	if !p.wait(c) {
		return
	}
	d := net.Dialer{Timeout: proxyDialTimeout}
	up, err := d.Dial("tcp", p.target)
	if err != nil {
		c.reset(true) // the target is down: the client sees a reset
		return
	}
	if !c.setUpstream(up) { // severed while dialling
		return
	}

	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(c, up, c.client, false) }()
	go func() { defer pumps.Done(); p.pump(c, c.client, up, true) }()
	pumps.Wait()
}

// pump copies src to dst chunk by chunk, holding each chunk while the proxy
// is partitioned and delaying it by the latency (and the reply latency
// when reply: src is the target). When src ends it closes dst's write side
// (a FIN passes through); when a write fails it tears the pair down.
func (p *Proxy) pump(c *proxyConn, dst, src net.Conn, reply bool) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			read := time.Now()
			if !p.wait(c) {
				return
			}
			p.mu.Lock()
			lat := p.latency
			if reply {
				lat += p.replies
			}
			p.mu.Unlock()
			if wait := time.Until(read.Add(lat)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-c.done:
					t.Stop()
					return
				}
				if !p.wait(c) { // partitioned while delayed
					return
				}
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				c.reset(true)
				return
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
					return
				}
			}
			c.reset(!errors.Is(rerr, io.EOF))
			return
		}
	}
}
