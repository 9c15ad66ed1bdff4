package pool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/keeper"
	"github.com/fxelection/fxelection/fxelection/internal/names"
)

// Defaults for Config's zero values.
const (
	defaultMaxWorkers = 32
	// handOverParallel bounds the hand-overs a worker runs at once.
	handOverParallel = 16
	// scanParallel bounds the member slots a worker reads at once.
	scanParallel = 8
	// scanAhead is how many slots past the highest live one a scan reads
	// (the Pool and Config.MaxWorkers docs state it).
	scanAhead = 8
	// settleBeats is how many renewals of its member slot a member must
	// have made before other workers hand it shards.
	settleBeats = 1
	// maxWorkersLimit bounds MaxWorkers.
	maxWorkersLimit = 1024
	// maxShards bounds len(Shards): each is an Elector in this process.
	maxShards = 100_000
)

// Config configures one worker's Pool. The zero value of every field but
// Name and Shards means its documented default.
type Config struct {
	// Name names the pool; workers with the same Name on the same backend
	// share its shards. Shard s is the election "<Name>#shard/<s>";
	// member slot k is the election "<Name>#member/<k>": names no user
	// gives, so no election, lock or other pool can use them. Required;
	// a user-given name (backendkit.UserNameProblem: printable, no '#'),
	// and with every shard name it must fit an election name (200 bytes).
	Name string

	// Shards are the shards' names: non-empty, distinct, user-given names
	// as Name is, and the same on every worker of the pool. Required; at
	// most 100,000. Workers whose lists differ (a rolling change of the
	// list) report it (Status.Mismatched) and keep every shard owned, but
	// balance only among workers with the same list until they agree.
	Shards []string

	// Identity names this worker; unique among the pool's workers.
	// Default: fxelection.DefaultIdentity().
	Identity string

	// MaxWorkers is the number of member slots: at most this many workers
	// count towards the share (a worker that finds every slot taken still
	// campaigns for free shards, but others do not leave it any). A
	// worker takes the lowest free slot and reads, once per RetryPeriod,
	// the slots up to 8 past the highest live one. The same on every
	// worker of the pool (a difference counts as a mismatch, as Shards'
	// does). At most 1024. Default: 32.
	MaxWorkers int

	// MaxMoves bounds how many shards this worker hands over per
	// RetryPeriod while rebalancing (it never hands over more than its
	// excess). Set it to move shards gradually, at the price of a slower
	// spread. Default: len(Shards), no bound beyond the excess.
	MaxMoves int

	// Timing is every shard's and member record's timing (fxelection.Timing's
	// defaults and rules; MaxBackoff is the shard electors'). The pool's
	// own loop runs every RetryPeriod. A member slot is a lease of
	// RenewDeadline, or of the backend's minimum lease
	// (backendkit.MinDurationer: Azure Blob 15s, etcd its minimum TTL,
	// memcached one second) when that is longer; New and Start refuse a
	// LeaseDuration below that slot lease, naming LeaseDuration.
	fxelection.Timing

	// OnAcquired runs, in a goroutine of its own, when this worker takes a
	// shard; ctx ends the moment it loses it and carries the shard's lease
	// for fencing (fxelection.LeaseFromContext). As
	// fxelection.Callbacks.OnStartedLeading.
	OnAcquired func(ctx context.Context, shard string)

	// OnReleased is called once after every OnAcquired, when the shard's
	// leadership ended, and why (fxelection.ReasonResigned when it was
	// handed to another worker). As fxelection.Callbacks.OnStoppedLeading.
	OnReleased func(shard string, lease fxelection.Lease, reason fxelection.StopReason)

	// Logger receives the pool's and its electors' logs. Default: none.
	Logger *slog.Logger
}

// Shard is one shard this worker owns.
type Shard struct {
	// Name is the shard's name (one of Config.Shards).
	Name string
	// Lease is its lease; Lease.Term fences writes made for the shard.
	Lease fxelection.Lease
}

// Status is a snapshot of a pool worker.
type Status struct {
	// Members is the number of live workers seen at the last scan (this
	// one included once it holds a member slot); 0 before the first.
	Members int
	// Slot is this worker's member slot, -1 while it holds none.
	Slot int
	// Owned is how many shards this worker owns; Target the share it
	// aims at: ceil(len(Shards)/Members).
	Owned  int
	Target int
	// Moves is how many shards this worker has handed over since Start.
	Moves uint64
	// Mismatched is how many live members, at the last scan, balance
	// over another shard list or MaxWorkers than this worker (a rolling
	// change of the list). While it is above 0 this worker campaigns for
	// every free shard it knows, even at its share, and hands shards over
	// only to members with its own list, so that no shard is left without
	// an owner; the spread evens out once every worker runs one list.
	Mismatched int
	// Joining is how many members, at the last scan, hold a slot but
	// have not yet renewed it: they count towards no share and receive no
	// shards until they have (a worker that fails right after joining is
	// never handed shards it cannot take).
	Joining int
	// SlotRefused is how many member slot acquisitions the store refused
	// for their lease duration (backendkit.ErrDurationRange) since Start;
	// each is logged. SlotFailures counts every failed member slot
	// acquisition or renewal, those included.
	SlotRefused, SlotFailures uint64
	// Acquired is how many shard leaderships this worker has taken since
	// Start, whichever way: free, handed to it, or after their owner's
	// lease ended. Lost is how many of its shard leaderships ended other
	// than by a hand-over or Stop (lease lost, renew deadline, health).
	//
	// A pool never steals: a shard whose owner still renews moves only by
	// that owner's hand-over (Moves, at most MaxMoves per RetryPeriod), so
	// that there are never two owners. What other systems count as
	// steals, forced takeovers of live leases, shows here as nothing; a
	// takeover after an owner failed shows as its Lost (where it can
	// still count) and another worker's Acquired.
	Acquired, Lost uint64
}

// Pool is one worker of a pool: it keeps about an equal share of the
// shards, holding each with an fxelection.Elector of its own in one
// fxelection.Group.
//
// Membership lives in the store, through the same Backend contract as
// the shards: each worker holds the lowest free of MaxWorkers member
// slots, a lease of RenewDeadline (at least the backend's minimum lease)
// renewed (re-acquired) every RetryPeriod; every worker reads, each
// RetryPeriod, the slots up to 8 past the highest live one. A slot
// counts while the store reports it held (on observed-time stores, while
// its version changed within its lease), and only once its member has
// renewed it at least once: a member that joined and failed at once is
// never handed shards. The slot's record advertises what the member
// balances over (a digest of Shards, and MaxWorkers) and how many times
// it renewed. How many shards each member owns is read from the
// shards themselves: each of this worker's electors knows its shard's
// holder from its last attempt.
//
// The share is hi = ceil(N/W) of N shards over W live workers. A worker
// below hi campaigns for free shards; at hi or above its electors defer
// (fxelection.Candidacy.Defer): they read instead of acquiring and take
// only a shard handed to them. A worker above hi — or above floor(N/W)
// while another is below it — hands its excess over with
// Elector.ResignTo to the workers furthest below their share, at most
// MaxMoves per round, and only to members that advertise the same shard
// list and MaxWorkers. While a live member advertises another list
// (Status.Mismatched, logged when it begins and ends) no elector defers:
// every worker takes the free shards it knows, so that a shard only some
// workers know never waits for a hand-over that cannot come. After a
// round with moves the next comes 1.25 RetryPeriods later, not one: by
// then each of its electors has read its shard again (they retry within
// 1.2 RetryPeriods), so the counts include every worker's moves of that
// round.
//
// What it guarantees is what each shard's election guarantees: never two
// believing owners of a shard outside the renew-deadline rules, terms per
// shard strictly increasing (a moved shard gets a new term twice: the
// hand-over hint's, then the new owner's). What it does not: the share is
// reached within a few RetryPeriods, not at once; a worker that dies holds
// its shards until their leases expire (LeaseDuration) and counts as a
// member until its slot expires (RenewDeadline, or the backend's minimum
// lease, at most LeaseDuration), so its shards are taken within about
// LeaseDuration plus a retry period after it stopped.
type Pool struct {
	cfg     Config
	backend fxelection.Backend
	group   *fxelection.Group
	shards  []*shardElector
	log     *slog.Logger
	inc     string // member slot incarnation

	owned                 atomic.Int64 // shards led, from the electors' events
	hi                    atomic.Int64 // the share; electors defer at or above it
	mismatched            atomic.Int64 // live members with another list; no deferring while > 0
	moves                 atomic.Uint64
	acquired, lost        atomic.Uint64
	refused, slotFailures atomic.Uint64

	digest  string      // what this worker balances over: its Shards' digest
	workers string      // and MaxWorkers, as advertised in its slot record
	failing atomic.Bool // the last member slot call failed

	mu      sync.Mutex
	slot    int
	slotK   *keeper.Keeper // keeps the member slot; nil while it holds none
	members int
	joining int
	seen    []slotSeen // per member slot: the last read (only the loop touches it)
	top     int        // the highest live slot at the last scan, -1 when none
	started bool
	stopped bool
	stop    chan struct{}
	done    chan struct{}
}

type shardElector struct {
	name string
	e    *fxelection.Elector
}

// slotSeen is the last version read of a member slot and when it was
// first read, for stores that report no expiry (observed time).
type slotSeen struct {
	version string
	since   time.Time
	holder  string // the live, settled holder at the last read, "" when none
	same    bool   // holder advertised this worker's shard list and MaxWorkers
}

// New returns a worker for cfg on backend. It validates cfg (an error
// naming the bad field) and makes the shard electors; Start starts them.
func New(cfg Config, backend fxelection.Backend) (*Pool, error) {
	if backend == nil {
		return nil, errors.New("pool: Backend is required")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	g, err := fxelection.NewGroup(backend)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkSlotLease(backend); err != nil {
		return nil, err
	}
	p := &Pool{
		cfg: cfg, backend: backend, group: g, slot: -1, top: -1, log: cfg.Logger, inc: backendkit.NewIncarnation(),
		digest: shardsDigest(cfg.Shards), workers: strconv.Itoa(cfg.MaxWorkers),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.seen = make([]slotSeen, cfg.MaxWorkers)
	for _, name := range cfg.Shards {
		se := &shardElector{name: name}
		ecfg := fxelection.Config{
			Name: shardElection(cfg.Name, name), Identity: cfg.Identity,
			Timing:    cfg.Timing,
			Candidacy: fxelection.Candidacy{Defer: p.full},
			Logger:    cfg.Logger,
			Callbacks: p.callbacks(name),
		}
		names.AllowDerived(&ecfg)
		e, err := g.New(ecfg)
		if err != nil {
			return nil, fmt.Errorf("pool: shard %d: %w", len(p.shards), err)
		}
		e.AddObserver(fxelection.ObserverFunc(p.count))
		se.e = e
		p.shards = append(p.shards, se)
	}
	return p, nil
}

func (c Config) normalize() (Config, error) {
	if c.Identity == "" {
		c.Identity = fxelection.DefaultIdentity()
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = defaultMaxWorkers
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = max(1, len(c.Shards))
	}
	switch {
	case c.Name == "":
		return c, configErr("Name", "is required")
	case len(c.Shards) == 0:
		return c, configErr("Shards", "is required")
	case len(c.Shards) > maxShards:
		return c, configErr("Shards", "at most %d (is %d)", maxShards, len(c.Shards))
	case c.MaxWorkers < 1 || c.MaxWorkers > maxWorkersLimit:
		return c, configErr("MaxWorkers", "must be in [1, %d] (is %d)", maxWorkersLimit, c.MaxWorkers)
	case c.MaxMoves < 1:
		return c, configErr("MaxMoves", "must be positive (is %d)", c.MaxMoves)
	}
	if p := backendkit.UserNameProblem(c.Name); p != "" {
		return c, configErr("Name", "%s", p)
	}
	// The elections' names and timings are checked as an Elector's: the
	// last member slot's name for Name and the timings, then every shard's
	// name, each reported as Shards[i].
	ecfg := fxelection.Config{
		Name: memberElection(c.Name, c.MaxWorkers-1), Identity: c.Identity, Timing: c.Timing,
	}
	names.AllowDerived(&ecfg)
	if err := ecfg.Validate(); err != nil {
		return c, err // a *fxelection.ConfigError naming Name, Identity or a Timing field
	}
	seen := make(map[string]bool, len(c.Shards))
	for i, s := range c.Shards {
		field := "Shards[" + strconv.Itoa(i) + "]"
		switch {
		case s == "":
			return c, configErr(field, "is empty")
		case seen[s]:
			return c, configErr(field, "repeats an earlier shard")
		}
		if problem := backendkit.UserNameProblem(s); problem != "" {
			return c, configErr(field, "%s", problem)
		}
		if n := len(shardElection(c.Name, s)); n > backendkit.MaxNameLen {
			return c, configErr(field, "with Name, its election name must be at most %d bytes (is %d)", backendkit.MaxNameLen, n)
		}
		seen[s] = true
	}
	// The timings' defaults, for the pool's own loop and its electors.
	c.Timing = c.Timing.WithDefaults()
	return c, nil
}

// Validate reports the first problem New would report for c with no
// backend (an error naming the field), without making any elector: every
// shard's name and the elections' timings. The backend's minimum lease
// (see LeaseDuration) is checked by New and Start.
func (c Config) Validate() error {
	_, err := c.normalize()
	return err
}

// slotLease is the member slot's lease duration on backend: RenewDeadline,
// or the backend's minimum lease if that is longer.
func (c Config) slotLease(backend fxelection.Backend) time.Duration {
	return max(c.RenewDeadline, backendkit.MinLeaseDuration(backend))
}

// checkSlotLease refuses a normalized c whose member slot lease on backend
// would outlast a shard's lease (LeaseDuration): a dead member would then
// count towards the share after its shards expired, and the backend's
// minimum would make the shards' own leases too short anyway.
func (c Config) checkSlotLease(backend fxelection.Backend) error {
	if slot := c.slotLease(backend); slot > c.LeaseDuration {
		return configErr("LeaseDuration", "must be at least the member slot's lease, %v: the backend grants no lease shorter than %v (is %v)",
			slot, backendkit.MinLeaseDuration(backend), c.LeaseDuration)
	}
	return nil
}

// shardsDigest is what a worker advertises of its shard list: a digest of
// the names in order, so that workers with different lists tell.
func shardsDigest(shards []string) string {
	h := sha256.New()
	for _, s := range shards {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// configErr is a *fxelection.ConfigError naming a Config field.
func configErr(field, format string, args ...any) *fxelection.ConfigError {
	return &fxelection.ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// shardElection and memberElection name a pool's records: derived names,
// which no user-given name can be.
func shardElection(pool, shard string) string  { return names.PoolShard(pool, shard) }
func memberElection(pool string, k int) string { return names.PoolMember(pool, k) }

// callbacks are shard's elector callbacks: the Config's, named by shard.
func (p *Pool) callbacks(shard string) fxelection.Callbacks {
	var cb fxelection.Callbacks
	if f := p.cfg.OnAcquired; f != nil {
		cb.OnStartedLeading = func(ctx context.Context) { f(ctx, shard) }
	}
	if f := p.cfg.OnReleased; f != nil {
		cb.OnStoppedLeading = func(l fxelection.Lease, r fxelection.StopReason) { f(shard, l, r) }
	}
	return cb
}

// count keeps the owned, acquired and lost counts from the electors'
// events, synchronously.
func (p *Pool) count(ev fxelection.Event) {
	switch ev.Kind {
	case fxelection.EventStartedLeading:
		p.owned.Add(1)
		p.acquired.Add(1)
	case fxelection.EventStoppedLeading:
		p.owned.Add(-1)
		switch ev.Reason {
		case fxelection.ReasonLost, fxelection.ReasonDeadline, fxelection.ReasonUnhealthy:
			p.lost.Add(1)
		}
	}
}

// full is every shard elector's Config.Candidacy.Defer: at or above the share,
// take only what is handed over; but never while a member balances over
// another shard list, who may not know the shards left free.
func (p *Pool) full() bool {
	return p.mismatched.Load() == 0 && p.owned.Load() >= p.hi.Load()
}

// Start starts the shard electors and the pool's loop, whose first round
// (claiming a member slot, reading the others) comes at once. It does no
// I/O itself: until that round has set the share, the electors take free
// shards as if this worker were alone, and a joining worker finds few
// free. Start after Stop is an error, and so is a backend whose minimum
// lease (known only now for one resolved when the app starts) outlasts
// LeaseDuration (see Config.LeaseDuration).
func (p *Pool) Start(ctx context.Context) error {
	if err := p.cfg.checkSlotLease(p.backend); err != nil {
		return err
	}
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("pool: already started")
	}
	p.started = true
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	p.mu.Unlock()
	p.hi.Store(int64(len(p.shards))) // until the first round
	for i, s := range p.shards {
		if err := s.e.Start(ctx); err != nil {
			for _, t := range p.shards[:i] {
				_ = t.e.Stop(context.Background())
			}
			close(p.done)
			return fmt.Errorf("pool: start shard %q: %w", s.name, err)
		}
	}
	go p.run()
	return nil
}

// Stop stops the loop and every shard elector (releasing their leases,
// within ctx) and releases this worker's member slot. It returns within
// ctx's deadline plus the electors' own Stop bounds, even if a round of
// the loop is stuck in a backend call that ignores its context (that
// round's goroutine then ends when the call returns).
func (p *Pool) Stop(ctx context.Context) error {
	p.mu.Lock()
	if !p.started || p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	close(p.stop)
	p.mu.Unlock()
	var errs []error
	select {
	case <-p.done:
	case <-ctx.Done():
		// A round stuck in a backend call that ignores its context: the
		// loop ends when the call returns; the shards are stopped anyway.
		errs = append(errs, fmt.Errorf("the pool's loop did not end in time: %w", ctx.Err()))
	}
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, s := range p.shards {
		wg.Go(func() {
			if err := s.e.Stop(ctx); err != nil {
				emu.Lock()
				errs = append(errs, fmt.Errorf("shard %q: %w", s.name, err))
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	p.mu.Lock()
	k := p.slotK
	p.slot, p.slotK = -1, nil
	p.mu.Unlock()
	if k != nil {
		// A renewal in flight finishes first, so that the release
		// matches what the store last wrote; then the release runs on a
		// goroutine of its own, waited for within ctx: a backend that
		// ignores its context must not hold Stop.
		released := make(chan error, 1)
		go func() {
			held, _, err := k.Stop(ctx, errSlotReleased)
			if err == nil {
				err = p.backend.Release(ctx, held)
			}
			released <- err
		}()
		select {
		case err := <-released:
			if err != nil {
				errs = append(errs, fmt.Errorf("member slot: %w", err))
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("member slot: %w", ctx.Err()))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("pool: stop: %w", errors.Join(errs...))
	}
	return nil
}

// run is the pool's loop: a tick every RetryPeriod until Stop.
func (p *Pool) run() {
	defer close(p.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.RenewDeadline)
		go func() { // Stop cuts a tick short
			select {
			case <-p.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		moved := p.tick(ctx)
		cancel()
		t.Reset(p.nextTick(moved))
	}
}

// nextTick is the time to the next round: RetryPeriod, or after a round
// that handed shards over a little more than the electors' longest retry
// interval (1.2 × RetryPeriod), so that by then every elector of this
// worker has read its shard again and the counts include the moves of
// this round, this worker's and the others'. Rebalancing on counts older
// than that would hand over shards that others have handed over already.
func (p *Pool) nextTick(moved bool) time.Duration {
	if !moved {
		return p.cfg.RetryPeriod
	}
	return p.cfg.RetryPeriod + p.cfg.RetryPeriod/4
}

// tick is one round: heartbeat, read the members, set the share, hand
// over the excess. It reports whether it handed any shard over.
func (p *Pool) tick(ctx context.Context) bool {
	p.heartbeat(ctx)
	counts, ok := p.scan(ctx)
	if !ok {
		return false // the store did not answer: keep the last share
	}
	n := len(p.cfg.Shards)
	w := len(counts)
	p.mu.Lock()
	p.members = w
	p.mu.Unlock()
	if !slices.ContainsFunc(counts, func(m member) bool { return m.identity == p.cfg.Identity }) {
		// This worker campaigns all the same: without a slot, or with one
		// whose read failed (a round cut short by Stop, say).
		w++
	}
	hi, lo := (n+w-1)/w, n/w
	p.hi.Store(int64(hi))
	return p.rebalance(ctx, counts, int(p.owned.Load()), hi, lo) > 0
}

// heartbeat claims a member slot when this worker holds none (its
// keeper renews the one it holds, every RetryPeriod, and ends when the
// slot is lost or no renewal succeeded within the slot's lease).
func (p *Pool) heartbeat(ctx context.Context) {
	p.mu.Lock()
	k, stopped := p.slotK, p.stopped
	p.mu.Unlock()
	if stopped { // a round that outlived Stop claims nothing
		return
	}
	if k != nil {
		if k.Context().Err() == nil {
			return
		}
		p.mu.Lock()
		if p.slotK == k {
			p.slot, p.slotK = -1, nil
		}
		p.mu.Unlock()
	}
	// Claim the lowest free slot, so that the live members sit in the
	// lowest slots and a scan reads only a few past the highest.
	req := p.slotRequest(0)
	for slot := range p.cfg.MaxWorkers {
		req.Election = memberElection(p.cfg.Name, slot)
		start := time.Now()
		l, err := p.backend.Acquire(ctx, req)
		if err == nil {
			p.slotOK()
			p.mu.Lock()
			if !p.stopped {
				p.slot, p.slotK = slot, p.keepSlot(slot, l, start)
			}
			p.mu.Unlock()
			return
		}
		if backendkit.IsStoreFailure(err) {
			p.slotFailed(slot, err)
			return
		}
	}
}

// slotRequest is the Acquire request for a member slot (Election unset)
// whose record says it was renewed beats times.
//
// The slot lasts RenewDeadline, less than a shard's lease: a worker that
// stopped renewing leaves the membership before its shards expire, so the
// others' share has grown by the time those shards are free, and they take
// them at their next attempt. A worker whose slot renewals are RenewDeadline
// late is near its shards' renew deadlines too. The slot lasts at least
// the backend's minimum lease (Start checked that it does not outlast
// LeaseDuration). Its record advertises what this worker balances over
// and how many times it renewed the slot.
func (p *Pool) slotRequest(beats int) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{
		Identity: p.cfg.Identity, Incarnation: p.inc, Duration: p.cfg.slotLease(p.backend),
		Metadata: map[string]string{metaShards: p.digest, metaWorkers: p.workers, metaBeats: strconv.Itoa(beats)},
	}
}

// errSlotLost and errSlotReleased end a member slot's keeper: lost (taken
// by another worker, or not renewed within its lease), or released by Stop.
var (
	errSlotLost     = errors.New("pool: member slot lost")
	errSlotReleased = errors.New("pool: member slot released")
)

// keepSlot starts the keeper of member slot k, won as l by an attempt
// that began at start. Its renewals re-acquire the slot, so that its
// record counts them. It believes in the slot until the slot's lease
// could expire in the store, not shorter: a member slot guards nothing a
// second holder could break, and a worker must not leave the membership
// before it is gone from the store.
func (p *Pool) keepSlot(k int, l fxelection.Lease, start time.Time) *keeper.Keeper {
	renew := &keeper.Reacquirer{Backend: p.backend, Request: func(n int) backendkit.AcquireRequest {
		req := p.slotRequest(n)
		req.Election = memberElection(p.cfg.Name, k)
		return req
	}}
	keep := new(keeper.Keeper)
	keep.Start(context.Background(), &keeper.Config{
		Renewer: renew, RenewDeadline: p.cfg.slotLease(p.backend), RetryPeriod: p.cfg.RetryPeriod, Lost: errSlotLost,
		OnRenew: func(err error) {
			switch {
			case err == nil:
				p.slotOK()
			case backendkit.IsStoreFailure(err):
				p.slotFailed(k, err)
			default:
				p.log.Warn("pool: member slot lost", "slot", k, "error", err)
			}
		},
	}, l, start)
	return keep
}

// The member slot record's metadata keys: the digest of the member's
// Shards, its MaxWorkers, and how many times it renewed the slot.
const (
	metaShards  = "fxelection.pool.shards"
	metaWorkers = "fxelection.pool.max-workers"
	metaBeats   = "fxelection.pool.renewals"
)

// slotOK notes a member slot call that succeeded.
func (p *Pool) slotOK() {
	if p.failing.Swap(false) {
		p.log.Info("pool: member slot calls succeed again")
	}
}

// slotFailed counts and logs a member slot call that failed as a store
// failure (logged when a run of failures begins; a refused duration
// always, since no retry helps).
func (p *Pool) slotFailed(slot int, err error) {
	p.slotFailures.Add(1)
	wasFailing := p.failing.Swap(true)
	if errors.Is(err, backendkit.ErrDurationRange) {
		p.refused.Add(1)
		p.log.Error("pool: the store refused the member slot's lease duration: the pool cannot spread; set RenewDeadline within the store's lease range",
			"slot", slot, "duration", p.cfg.slotLease(p.backend), "error", err)
	} else if !wasFailing {
		p.log.Warn("pool: member slot call failed", "slot", slot, "error", err)
	}
}

// member is a live worker seen at a scan, and the shards it owns; same
// when it advertises this worker's shard list and MaxWorkers.
type member struct {
	identity string
	owned    int
	same     bool
}

// scan reads every member slot and returns the live members, each with
// the number of shards it owns as this worker's electors last saw their
// holders (a shard handed over counts for its successor); ok is false when
// the store failed. The shards' holders are fresher than anything a member
// could write in its own record: every elector reads its shard's holder
// at every attempt.
func (p *Pool) scan(ctx context.Context) (members []member, ok bool) {
	// Members claim the lowest free slot: reading up to scanAhead slots
	// past the highest live one (or this worker's) finds every member. The
	// slots are read in parallel, a few at a time.
	type read struct {
		l   fxelection.Lease
		err error
	}
	p.mu.Lock()
	top := max(p.top, p.slot)
	p.mu.Unlock()
	reads := make([]read, min(p.cfg.MaxWorkers, top+1+scanAhead))
	var wg sync.WaitGroup
	sem := make(chan struct{}, scanParallel)
	for k := range reads {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			reads[k].l, reads[k].err = p.backend.Get(ctx, memberElection(p.cfg.Name, k))
		})
	}
	wg.Wait()
	now := time.Now()
	live := make(map[string]bool) // settled members: whether they balance over this worker's list
	newTop, failed, mismatched, joining := -1, 0, 0, 0
	for k, r := range reads {
		l, err := r.l, r.err
		if err != nil {
			if backendkit.IsStoreFailure(err) && !errors.Is(err, backendkit.ErrInvalidRecord) {
				// Unknown this time: it counts as it did at the last scan.
				failed++
				if h := p.seen[k].holder; h != "" {
					live[h] = p.seen[k].same
					newTop = k
					if !p.seen[k].same {
						mismatched++
					}
				}
				continue
			}
			p.seen[k] = slotSeen{}
			continue
		}
		if l.ExpiresAt.IsZero() {
			// Observed time: live while its version changes within its
			// lease.
			if s := p.seen[k]; s.version != l.Version || s.since.IsZero() {
				p.seen[k] = slotSeen{version: l.Version, since: now}
			} else if now.Sub(s.since) >= l.Duration {
				p.seen[k].holder = ""
				continue
			}
		}
		newTop = k
		self := l.Holder == p.cfg.Identity
		same := self || l.Metadata[metaShards] == p.digest && l.Metadata[metaWorkers] == p.workers
		if !same {
			mismatched++
		}
		if beats, _ := strconv.Atoi(l.Metadata[metaBeats]); !self && beats < settleBeats {
			// Joined but not yet seen renewing: no share, no shards.
			p.seen[k].holder = ""
			joining++
			continue
		}
		p.seen[k].holder, p.seen[k].same = l.Holder, same
		live[l.Holder] = same
	}
	if failed == len(reads) {
		return nil, false
	}
	p.mu.Lock()
	p.top = newTop
	p.joining = joining
	p.mu.Unlock()
	p.setMismatched(mismatched)
	counts := make(map[string]int, len(live))
	for _, s := range p.shards {
		if l, ok := s.e.Leader(); ok {
			if _, isLive := live[l.Holder]; isLive {
				counts[l.Holder]++
			}
		}
	}
	counts[p.cfg.Identity] = int(p.owned.Load())
	for id, same := range live {
		members = append(members, member{identity: id, owned: counts[id], same: same})
	}
	return members, true
}

// setMismatched records how many live members balance over another list
// than this worker's, logging when such a difference begins and ends.
func (p *Pool) setMismatched(n int) {
	switch was := p.mismatched.Swap(int64(n)); {
	case was == 0 && n > 0:
		p.log.Warn("pool: members balance over another shard list or MaxWorkers: every worker takes the free shards it knows, and hands shards over only to members with its own list, until they agree",
			"members", n)
	case was > 0 && n == 0:
		p.log.Info("pool: every member balances over this worker's shard list again")
	}
}

// rebalance hands over this worker's excess: down to hi, or to lo while
// another member is below lo, each to the member furthest below its
// share, at most MaxMoves. It returns how many shards it handed over.
func (p *Pool) rebalance(ctx context.Context, members []member, owned, hi, lo int) int {
	var below []member // candidates to receive, furthest below first
	over, under := 0, 0
	for _, m := range members {
		if m.identity == p.cfg.Identity {
			continue
		}
		if m.owned < hi && m.same {
			// Only a member with this worker's list knows every shard it
			// could be handed.
			below = append(below, m)
		}
		if m.owned > hi {
			over++
		}
		if m.owned < lo {
			under++
		}
	}
	if len(below) == 0 {
		return 0
	}
	target := hi
	if owned <= hi && under > 0 {
		target = lo // only the workers below lo are owed anything
		over = 0
		for _, m := range members {
			if m.identity != p.cfg.Identity && m.owned > lo {
				over++
			}
		}
	}
	excess := min(owned-target, p.cfg.MaxMoves)
	if excess <= 0 {
		return 0
	}
	sort.SliceStable(below, func(i, j int) bool { return below[i].owned < below[j].owned })
	// Each of the over-share workers (this one included) gives a member
	// its deficit's share, so that together they do not overshoot it.
	givers := over + 1
	var plan []string
	for _, m := range below {
		limit := lo
		if target == hi {
			limit = hi
		}
		give := (limit - m.owned + givers - 1) / givers
		for ; give > 0 && len(plan) < excess; give-- {
			plan = append(plan, m.identity)
		}
	}
	if len(plan) == 0 {
		return 0
	}
	held := p.held()
	rand.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	// In parallel, a few at a time: each hand-over waits for its shard's
	// leader work and a store round trip or two.
	var (
		moved atomic.Int64
		wg    sync.WaitGroup
		sem   = make(chan struct{}, handOverParallel)
	)
	for i, to := range plan {
		if i >= len(held) {
			break
		}
		s := held[i]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.e.ResignTo(ctx, to); err != nil {
				p.log.Warn("pool: hand-over failed", "shard", s.name, "to", to, "error", err)
				return
			}
			moved.Add(1)
		})
	}
	wg.Wait()
	n := moved.Load()
	if n > 0 {
		p.moves.Add(uint64(n))
		p.log.Info("pool: shards handed over", "count", n)
	}
	return int(n)
}

// held returns the shard electors that lead now.
func (p *Pool) held() []*shardElector {
	var out []*shardElector
	for _, s := range p.shards {
		if s.e.IsLeader() {
			out = append(out, s)
		}
	}
	return out
}

// Owned returns the shards this worker owns now, with their leases, in
// Config.Shards order.
func (p *Pool) Owned() []Shard {
	var out []Shard
	for _, s := range p.shards {
		if l, ok := s.e.Lease(); ok {
			out = append(out, Shard{Name: s.name, Lease: l})
		}
	}
	return out
}

// Elector returns the elector of shard, for its Status, RunIfLeader or
// observers; nil for a name that is not one of Config.Shards.
func (p *Pool) Elector(shard string) *fxelection.Elector {
	for _, s := range p.shards {
		if s.name == shard {
			return s.e
		}
	}
	return nil
}

// Status returns a snapshot of the worker.
func (p *Pool) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Status{
		Members: p.members, Slot: p.slot, Owned: int(p.owned.Load()), Target: int(p.hi.Load()),
		Moves: p.moves.Load(), Mismatched: int(p.mismatched.Load()), Joining: p.joining,
		SlotRefused: p.refused.Load(), SlotFailures: p.slotFailures.Load(),
		Acquired: p.acquired.Load(), Lost: p.lost.Load(),
	}
}
