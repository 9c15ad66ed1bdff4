package pglease

import (
	"context"
	"log/slog"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/modules/postgres/internal/pgident"
)

// Listener reconnect backoff: doubling from the first to the cap, jittered.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
	closeTimeout     = time.Second
)

// pusher runs the Backend's one LISTEN connection, shared by all its
// subscriptions through a backendkit.WakeHub: started by the first
// Subscribe, stopped when the last subscription is cancelled.
type pusher struct {
	db      DB
	channel string // raw, as pg_notify sees it
	listen  string // LISTEN statement with the quoted channel
	log     *slog.Logger
	redact  func(error) error
	hub     *backendkit.WakeHub // nil with DisablePush
}

func newPusher(db DB, opts Options, redact func(error) error) *pusher {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &pusher{
		db:      db,
		channel: opts.Channel,
		listen:  "LISTEN " + pgident.Quote(opts.Channel),
		log:     log.With("channel", opts.Channel),
		redact:  redact,
	}
	if !opts.DisablePush {
		p.hub = backendkit.NewWakeHub(p.loop)
	}
	return p
}

// Subscribe implements backendkit.Notifier: wake is called when a Release
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
	if b.push.hub == nil {
		return func() {}
	}
	return b.push.hub.Subscribe(election, wake)
}

// close stops the listener for good.
func (p *pusher) close() {
	if p.hub != nil {
		p.hub.Close()
	}
}

// loop keeps a LISTEN session up until ctx is done, reconnecting with
// backoff.
func (p *pusher) loop(ctx context.Context, hub *backendkit.WakeHub) {
	failures := 0
	for {
		listened, err := p.session(ctx, hub, failures > 0)
		if ctx.Err() != nil {
			return
		}
		if listened {
			failures = 0
		}
		failures++
		wait := backendkit.Backoff(failures, listenBackoffMin, listenBackoffMax)
		p.log.Warn("fxelection postgres listener down; followers poll until it is back", "error", p.redact(err), "retry_in", wait)
		if !backendkit.SleepContext(ctx, wait) {
			return
		}
	}
}

// session takes a connection from the pool, LISTENs and dispatches
// notifications until an error or ctx ends it. listened reports whether
// LISTEN succeeded. Once listening it wakes every subscriber, for releases
// missed while the listener was down or not yet up (a subscriber that
// found the lease held just before subscribing would otherwise wait for
// its next poll); reconnected says it was down, to log it.
func (p *pusher) session(ctx context.Context, hub *backendkit.WakeHub, reconnected bool) (listened bool, err error) {
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
	if reconnected {
		p.log.Info("fxelection postgres listener reconnected")
	}
	hub.WakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		hub.Wake(n.Payload)
	}
}
