package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// latencyProxy forwards TCP connections to a target, delaying every chunk
// by the current latency in each direction without holding up the chunks
// behind it: a round trip takes twice the latency longer, but a pipeline
// is not split into round trips (as network delay, not a slow link).
// electiontest.Proxy delays each chunk before reading the next, which
// also caps throughput; the overload phase wants latency alone.
type latencyProxy struct {
	ln      net.Listener
	target  string
	latency atomic.Int64 // nanoseconds
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
}

func newLatencyProxy(target string) (*latencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &latencyProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *latencyProxy) Addr() string { return p.ln.Addr().String() }

// SetLatency sets the delay added to each direction (0: none).
func (p *latencyProxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *latencyProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *latencyProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *latencyProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.track(down)
		p.track(up)
		p.wg.Go(func() { p.pipe(up, down) })
		p.wg.Go(func() { p.pipe(down, up) })
	}
}

// chunk is bytes read at a time, to be written at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk written the latency after it was
// read; when either side fails both are closed.
func (p *latencyProxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	ch := make(chan chunk, 1024)
	var w sync.WaitGroup
	w.Go(func() {
		for c := range ch {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.b); err != nil {
				_ = src.Close()
				for range ch { // drain
				}
				return
			}
		}
	})
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			ch <- chunk{b: buf[:n], due: time.Now().Add(time.Duration(p.latency.Load()))}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = dst.Close()
			}
			break
		}
	}
	close(ch)
	w.Wait()
}
