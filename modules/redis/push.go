package redislease

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// pushHealthInterval is how long the pub/sub connection may stay silent
	// before it is pinged; a ping unanswered for as long again replaces it.
	pushHealthInterval = 5 * time.Second
	// pushMinBackoff and pushMaxBackoff bound the wait between attempts to
	// reach a server that refuses the pub/sub connection.
	pushMinBackoff = 50 * time.Millisecond
	pushMaxBackoff = 2 * time.Second
)

// subscriber is one Subscribe call.
type subscriber struct {
	election string
	wake     func()
}

// pump owns the Backend's one pub/sub connection and the goroutine reading
// it. stop ends both and waits for the goroutine.
type pump struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	ps     *redis.PubSub // nil until opened
	closed bool
}

// Subscribe implements fxelection.Notifier: wake is called when a lease of
// election is released through any Backend with the same key prefix, and
// (spuriously) for every election after the shared pub/sub connection
// (re)subscribes, since a release may have been missed while it was down.
// The first subscription starts the connection's goroutine and the last
// cancel stops it; cancel returns after wake can no longer be called. wake
// is called with the Backend's lock held, so it must not block or call back
// into the Backend (the elector's wake-up only signals a channel). With
// Options.DisablePush, Subscribe does nothing.
func (b *Backend) Subscribe(election string, wake func()) (cancel func()) {
	if !b.push || wake == nil {
		return func() {}
	}
	s := &subscriber{election: election, wake: wake}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return func() {}
	}
	set := b.subs[election]
	if set == nil {
		set = map[*subscriber]struct{}{}
		b.subs[election] = set
	}
	set[s] = struct{}{}
	if b.pump == nil {
		b.pump = b.startPump()
	}
	b.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { b.unsubscribe(s) }) }
}

func (b *Backend) unsubscribe(s *subscriber) {
	b.mu.Lock()
	set := b.subs[s.election]
	delete(set, s)
	if len(set) == 0 {
		delete(b.subs, s.election)
	}
	var p *pump
	if len(b.subs) == 0 {
		p, b.pump = b.pump, nil
	}
	b.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// shutdown stops push for good (for a Backend that owns its client and is
// about to close it). Later Subscribe calls do nothing.
func (b *Backend) shutdown() {
	b.mu.Lock()
	b.closed = true
	p := b.pump
	b.pump = nil
	b.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// startPump starts the pub/sub goroutine; b.mu is held. It does no I/O.
func (b *Backend) startPump() *pump {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pump{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go b.runPump(p)
	return p
}

// stop closes the connection and waits for the goroutine to end.
func (p *pump) stop() {
	p.cancel() // aborts a dial in progress
	p.mu.Lock()
	p.closed = true
	ps := p.ps
	p.mu.Unlock()
	if ps != nil {
		_ = ps.Close() // unblocks a read in progress
	}
	<-p.done
}

// open (re)creates the pub/sub connection; nil once the pump is stopped.
func (p *pump) open(b *Backend) *redis.PubSub {
	// Subscribe dials and sends SUBSCRIBE; on failure go-redis keeps the
	// channel and subscribes again when Receive reconnects.
	ps := b.client.Subscribe(p.ctx, b.channel)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = ps.Close()
		return nil
	}
	if p.ps != nil {
		_ = p.ps.Close()
	}
	p.ps = ps
	return ps
}

// runPump reads wake-ups until the pump is stopped. go-redis reconnects and
// resubscribes after a broken connection; this loop paces attempts while
// the server is unreachable and pings a silent connection.
func (b *Backend) runPump(p *pump) {
	defer close(p.done)
	ps := p.open(b)
	failures, unanswered := 0, false
	for ps != nil {
		msg, err := ps.ReceiveTimeout(p.ctx, b.health)
		if p.ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && failures == 0 {
				if unanswered {
					// The last ping got no answer: the connection is dead
					// without having been closed. Replace it.
					ps, unanswered = p.open(b), false
					continue
				}
				_ = ps.Ping(p.ctx)
				unanswered = true
				continue
			}
			failures++
			if !sleep(p.ctx, pushBackoff(failures)) {
				return
			}
			continue
		}
		failures, unanswered = 0, false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				b.wakeAll()
			}
		case *redis.Message:
			b.wakeElection(m.Payload)
		}
	}
}

// wakeElection calls election's subscribers. It holds b.mu so that a
// cancelled subscription is never called after its cancel returned; wake
// functions do not block, by the Notifier contract.
func (b *Backend) wakeElection(election string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[election] {
		s.wake()
	}
}

// wakeAll calls every subscriber.
func (b *Backend) wakeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, set := range b.subs {
		for s := range set {
			s.wake()
		}
	}
}

// pushBackoff is the wait after n consecutive failures to reach the server.
func pushBackoff(n int) time.Duration {
	d := pushMinBackoff
	for i := 1; i < n && d < pushMaxBackoff; i++ {
		d *= 2
	}
	return min(d, pushMaxBackoff)
}

// sleep waits for d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
