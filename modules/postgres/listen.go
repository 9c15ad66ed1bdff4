package pglease

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener reconnect backoff: doubling from the first to the cap, jittered.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
	closeTimeout     = time.Second
)

// pusher runs the Backend's one LISTEN connection, shared by all its
// subscriptions: started by the first Subscribe, stopped when the last
// subscription is cancelled.
type pusher struct {
	db      DB
	channel string // raw, as pg_notify sees it
	listen  string // LISTEN statement with the quoted channel
	off     bool
	log     *slog.Logger

	mu     sync.Mutex // guards the fields below; wake calls run under it
	subs   map[string]map[*subscription]struct{}
	count  int
	run    *listenRun
	closed bool
}

type subscription struct{ wake func() }

// listenRun is one listener goroutine; done is closed when it has ended
// and its connection is closed.
type listenRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newPusher(db DB, opts Options) *pusher {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &pusher{
		db:      db,
		channel: opts.Channel,
		listen:  "LISTEN " + pgx.Identifier{opts.Channel}.Sanitize(),
		off:     opts.DisablePush,
		log:     log.With("channel", opts.Channel),
		subs:    map[string]map[*subscription]struct{}{},
	}
}

// Subscribe implements fxelection.Notifier: wake is called when a Release
// of election's lease is notified on the channel (by any process using the
// same table and channel), and once after the listener reconnects, since a
// release may have been missed meanwhile. The first subscription starts
// the Backend's listener, which takes one connection from the pool for as
// long as any subscription is open (the connection is hijacked: it no
// longer counts against the pool's MaxConns); cancelling the last one stops
// it and closes that connection before cancel returns. After cancel
// returns, wake is not called again. wake must not block or call cancel.
// With DisablePush, or after Close, Subscribe does nothing.
func (b *Backend) Subscribe(election string, wake func()) (cancel func()) {
	return b.push.subscribe(election, wake)
}

func (p *pusher) subscribe(election string, wake func()) func() {
	if p.off {
		return func() {}
	}
	s := &subscription{wake: wake}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return func() {}
	}
	if p.subs[election] == nil {
		p.subs[election] = map[*subscription]struct{}{}
	}
	p.subs[election][s] = struct{}{}
	p.count++
	if p.run == nil {
		p.run = p.start()
	}
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { p.unsubscribe(election, s) }) }
}

func (p *pusher) unsubscribe(election string, s *subscription) {
	p.mu.Lock()
	var stop *listenRun
	if _, ok := p.subs[election][s]; ok {
		delete(p.subs[election], s)
		if len(p.subs[election]) == 0 {
			delete(p.subs, election)
		}
		p.count--
		if p.count == 0 {
			stop, p.run = p.run, nil
		}
	}
	p.mu.Unlock()
	stop.stop()
}

// close stops the listener for good.
func (p *pusher) close() {
	p.mu.Lock()
	p.closed = true
	stop := p.run
	p.run, p.subs, p.count = nil, map[string]map[*subscription]struct{}{}, 0
	p.mu.Unlock()
	stop.stop()
}

// stop cancels the run and waits until its goroutine has ended.
func (r *listenRun) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// start launches a listener goroutine; p.mu is held.
func (p *pusher) start() *listenRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &listenRun{cancel: cancel, done: make(chan struct{})}
	go p.loop(ctx, r.done)
	return r
}

// loop keeps a LISTEN session up until ctx is done, reconnecting with
// backoff.
func (p *pusher) loop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	failures := 0
	for {
		listened, err := p.session(ctx, failures > 0)
		if ctx.Err() != nil {
			return
		}
		if listened {
			failures = 0
		}
		failures++
		wait := listenBackoff(failures)
		p.log.Warn("fxelection postgres listener down; followers poll until it is back", "error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session takes a connection from the pool, LISTENs and dispatches
// notifications until an error or ctx ends it. listened reports whether
// LISTEN succeeded. wakeAll makes it wake every subscriber once listening,
// for releases missed while the listener was down.
func (p *pusher) session(ctx context.Context, wakeAll bool) (listened bool, err error) {
	pc, err := p.db.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// Hijack: the connection leaves the pool for good, so a LISTEN session
	// never goes back into it, and pool.Close never waits for us.
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		_ = conn.Close(cctx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, p.listen); err != nil {
		return false, err
	}
	if wakeAll {
		p.log.Info("fxelection postgres listener reconnected")
		p.dispatch("", true)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		p.dispatch(n.Payload, false)
	}
}

// dispatch wakes the subscribers of election (or all of them). Calling
// wake under the lock is what lets cancel promise no call after it
// returns; wake never blocks, by contract.
func (p *pusher) dispatch(election string, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !all {
		for s := range p.subs[election] {
			s.wake()
		}
		return
	}
	for _, set := range p.subs {
		for s := range set {
			s.wake()
		}
	}
}

// listenBackoff returns the wait after n consecutive failed sessions.
func listenBackoff(n int) time.Duration {
	d := listenBackoffMin
	for i := 1; i < n && d < listenBackoffMax; i++ {
		d *= 2
	}
	d = min(d, listenBackoffMax)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}
