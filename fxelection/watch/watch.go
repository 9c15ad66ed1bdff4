package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"

	"go.uber.org/fx"
)

// Defaults for Config's zero values.
const (
	// DefaultTimeout bounds one Get when Config.Timeout is zero.
	DefaultTimeout      = 5 * time.Second
	defaultPollInterval = 2 * time.Second
	defaultMaxBackoff   = 30 * time.Second
)

// watchFollowUpMin is the first re-read after a push wake-up that found
// no leader: the candidates woken by the same release acquire within
// milliseconds, so the watcher looks again soon (doubling up to
// PollInterval) instead of a full poll later.
const watchFollowUpMin = 20 * time.Millisecond

// Config configures a Watcher. The zero value of every field but
// Name means its documented default.
type Config struct {
	// Name is the election to follow. Required; the same rule as
	// fxelection.Config.Name (backendkit.UserNameProblem: no '#').
	Name string
	// PollInterval is how often the watcher reads the lease (fxelection.Backend.Get),
	// jittered up to 1.2 × PollInterval. It bounds how stale the
	// answer is; see Watcher. Default: 2s.
	PollInterval time.Duration
	// MaxBackoff caps the wait between reads after consecutive store
	// failures. Default: 30s; never below PollInterval.
	MaxBackoff time.Duration
	// Timeout bounds each read. Default: 5s.
	Timeout time.Duration
	// OnChange is called with the first answer and then with every change of
	// leader (holder, term or metadata, or the lease becoming free), in
	// order, from the watcher's goroutine: a slow OnChange delays the next
	// read. A panic in it is recovered and logged.
	OnChange func(LeaderInfo)
	// Logger receives store failures (at Warn) and recovered panics.
	// Default: none.
	Logger *slog.Logger
}

func (c Config) normalize() (Config, error) {
	if p := backendkit.UserNameProblem(c.Name); p != "" {
		return c, fmt.Errorf("fxelection: Config.Name: %s", p)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"PollInterval", c.PollInterval}, {"MaxBackoff", c.MaxBackoff}, {"Timeout", c.Timeout}} {
		if f.d < 0 {
			return c, fmt.Errorf("fxelection: Config.%s: must not be negative (is %v)", f.name, f.d)
		}
	}
	if c.PollInterval == 0 {
		c.PollInterval = defaultPollInterval
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.PollInterval)
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c, nil
}

// LeaderInfo is what a Watcher knows of an election's leader.
type LeaderInfo struct {
	// Leader is the current holder (identity, metadata such as an advertised
	// address, term) when HasLeader; the zero fxelection.Lease otherwise.
	Leader fxelection.Lease
	// HasLeader is false when the store reported that nobody holds the
	// lease (free, released or expired).
	HasLeader bool
	// ObservedAt is when the store gave this answer, by the local clock.
	ObservedAt time.Time
}

func (i LeaderInfo) sameLeader(o LeaderInfo) bool {
	return i.HasLeader == o.HasLeader && i.Leader.Holder == o.Leader.Holder &&
		i.Leader.Term == o.Leader.Term && maps.Equal(i.Leader.Metadata, o.Leader.Metadata)
}

// Watcher follows an election's current leader without campaigning: for
// processes that are not candidates but need to know the leader, for
// example to route requests to the address it advertises in its metadata.
// It reads the lease with fxelection.Backend.Get every PollInterval and, on a backend
// that implements backendkit.Notifier, also at once when a release is pushed. Create it
// with New (or NewFromParams under fx), Start it, and read
// Leader, subscribe with Subscribe, or set OnChange.
//
// Freshness — how stale Leader can be while the store answers:
//
//   - Every backend: at most 1.2 × PollInterval plus one Get round
//     trip after the store's answer changed. Changes that last less than
//     that (two hand-overs within one poll) can be missed: the watcher
//     reports states it saw, not every state the store went through.
//   - Backends with push wake-up (Redis, Postgres, NATS KV, etcd,
//     in-memory): a graceful hand-over (Resign, Stop) is seen within
//     milliseconds — the release wakes the watcher, which re-reads quickly
//     (from 20 ms, doubling up to PollInterval) until it sees the next
//     holder. A takeover after a crash or a cut is not pushed (except on
//     etcd, whose watch also reports the key deleted when its lease
//     expires): it is seen within the poll bound after the new holder
//     acquired, which comes as late as the backend's failover bound after
//     the old holder's last renewal (see its package doc).
//   - Server-authoritative stores (Redis, Postgres, Azure Blob, memcached,
//     etcd, in-memory) report an expired lease as free; observed-time
//     stores (S3, NATS KV) keep reporting the last holder until another
//     candidate replaces its record, since no node may judge expiry from
//     the record alone.
//   - While the store fails, the last answer is kept (ObservedAt ages,
//     LastError says why) and reads back off up to MaxBackoff.
//
// A leader that lost its lease may still act for up to RenewDeadline (and
// longer if paused); the watcher reports the store's view, not the old
// leader's belief. Its methods are safe for concurrent use.
type Watcher struct {
	cfg      Config
	backend  fxelection.Backend
	notifier backendkit.Notifier
	log      *slog.Logger
	wake     chan struct{}

	lifeMu sync.Mutex // serialises Start and Stop

	mu      sync.Mutex
	started bool
	stopped bool // Stop called
	closed  bool // subscriptions closed; no more sends
	cancel  context.CancelFunc
	done    chan struct{}
	info    LeaderInfo
	known   bool
	lastErr error
	subs    map[*watchSub]struct{}
}

type watchSub struct{ ch chan LeaderInfo }

// New returns a Watcher for cfg.Name on backend. It validates cfg
// (an error names the bad field) and does no I/O.
func New(cfg Config, backend fxelection.Backend) (*Watcher, error) {
	if backend == nil {
		return nil, errors.New("fxelection: fxelection.Backend is required")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{
		cfg: cfg, backend: backend, log: log.With("election", cfg.Name, "watcher", true),
		wake: make(chan struct{}, 1), subs: map[*watchSub]struct{}{},
	}
	w.notifier, _ = backend.(backendkit.Notifier)
	return w, nil
}

// Start begins following the leader in a goroutine owned by the Watcher
// and returns at once; the first read happens immediately. Calling it again
// while running does nothing; after Stop it returns fxelection.ErrStopped.
func (w *Watcher) Start(ctx context.Context) error {
	w.lifeMu.Lock()
	defer w.lifeMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.stopped:
		return fxelection.ErrStopped
	case w.started:
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.started, w.cancel, w.done = true, cancel, make(chan struct{})
	go w.run(runCtx)
	return nil
}

// Stop ends following and waits for the watcher's goroutine (a read in
// progress is cancelled; an OnChange call in progress is waited for),
// bounded by ctx: it returns ctx's error if that wait is cut short. It
// closes every Subscribe channel. Stop is idempotent.
func (w *Watcher) Stop(ctx context.Context) error {
	w.lifeMu.Lock()
	defer w.lifeMu.Unlock()
	w.mu.Lock()
	w.stopped = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	var err error
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("fxelection: stop watcher: %w", ctx.Err())
		}
	}
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		for s := range w.subs {
			close(s.ch)
		}
		w.subs = nil
	}
	w.mu.Unlock()
	return err
}

// Leader returns the current leader as last read, and false until the
// store has answered once.
func (w *Watcher) Leader() (LeaderInfo, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	info := w.info
	info.Leader = info.Leader.Clone()
	return info, w.known
}

// LastError returns the last store failure if the most recent read failed,
// else nil.
func (w *Watcher) LastError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// Subscribe returns a channel that receives the leader on every change,
// starting with the current one if known. The channel holds only the latest
// state: a receiver that falls behind skips intermediate states but always
// gets the newest. cancel (or Stop) closes the channel.
func (w *Watcher) Subscribe() (ch <-chan LeaderInfo, cancel func()) {
	s := &watchSub{ch: make(chan LeaderInfo, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		close(s.ch)
		return s.ch, func() {}
	}
	w.subs[s] = struct{}{}
	if w.known {
		s.send(w.info)
	}
	return s.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.subs[s]; ok {
			delete(w.subs, s)
			close(s.ch)
		}
	}
}

// send replaces any unread state with info; called with w.mu held.
func (s *watchSub) send(info LeaderInfo) {
	info.Leader = info.Leader.Clone()
	select {
	case <-s.ch:
	default:
	}
	s.ch <- info
}

func (w *Watcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run reads the lease until ctx is done.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	if w.notifier != nil {
		cancel := w.notifier.Subscribe(w.cfg.Name, w.poke)
		defer cancel()
	}
	failures := 0
	var followUp time.Duration // >0 while re-reading quickly after a wake-up
	for {
		info, err := w.read(ctx)
		var delay time.Duration
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			w.mu.Lock()
			w.lastErr = err
			w.mu.Unlock()
			w.log.Warn("watch leader", "error", err)
			delay, followUp = backoff.Delay(failures, w.cfg.PollInterval, w.cfg.MaxBackoff), 0
		default:
			failures = 0
			w.update(info)
			delay = backoff.Jitter(w.cfg.PollInterval)
			if followUp > 0 && !info.HasLeader && followUp < w.cfg.PollInterval {
				delay, followUp = followUp, followUp*2
			} else {
				followUp = 0
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-w.wake:
			t.Stop()
			followUp = watchFollowUpMin
		}
	}
}

// read makes one bounded Get.
func (w *Watcher) read(ctx context.Context) (LeaderInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	l, err := w.backend.Get(rctx, w.cfg.Name)
	now := time.Now()
	switch {
	case err == nil:
		if cerr := l.Validate(); cerr != nil {
			return LeaderInfo{}, &fxelection.OpError{Election: w.cfg.Name, Op: backendkit.OpGet, Err: cerr}
		}
		return LeaderInfo{Leader: l.Clone(), HasLeader: true, ObservedAt: now}, nil
	case errors.Is(err, backendkit.ErrNoLease):
		return LeaderInfo{ObservedAt: now}, nil
	default:
		return LeaderInfo{}, &fxelection.OpError{Election: w.cfg.Name, Op: backendkit.OpGet, Err: err}
	}
}

// update records info and announces a change.
func (w *Watcher) update(info LeaderInfo) {
	w.mu.Lock()
	changed := !w.known || !w.info.sameLeader(info)
	w.info, w.known, w.lastErr = info, true, nil
	if changed && !w.closed {
		for s := range w.subs {
			s.send(info)
		}
	}
	w.mu.Unlock()
	if changed && w.cfg.OnChange != nil {
		w.callOnChange(info)
	}
}

func (w *Watcher) callOnChange(info LeaderInfo) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("OnChange panicked", "panic", fmt.Sprint(r))
		}
	}()
	info.Leader = info.Leader.Clone()
	w.cfg.OnChange(info)
}

// Module provides a *Watcher for the Config and fxelection.Backend in
// the fx graph (and an optional *slog.Logger), started on app start and
// stopped on app stop (NewFromParams).
var Module = fx.Module("fxelection.watcher", fx.Provide(NewFromParams))

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Config    Config
	Backend   fxelection.Backend
	Logger    *slog.Logger `optional:"true"`
}

// NewFromParams builds a Watcher and ties it to the fx lifecycle:
// Start on start (non-blocking), Stop on stop.
func NewFromParams(p Params) (*Watcher, error) {
	cfg := p.Config
	if cfg.Logger == nil {
		cfg.Logger = p.Logger
	}
	w, err := New(cfg, p.Backend)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{OnStart: w.Start, OnStop: w.Stop})
	return w, nil
}
