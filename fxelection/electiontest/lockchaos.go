package electiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
)

// LockChaosOptions configures RunLockChaos. Zero fields take the documented
// defaults; the schedule's defaults are RunChaos's.
type LockChaosOptions struct {
	// Target is the store's address, "host:port". Every client reaches it
	// through a Proxy of its own. Required.
	Target string

	// NewClient builds one client's backend on a proxy's address.
	// Required.
	NewClient NewChaosClient

	// Server, if set, lets the schedule kill the server with SIGKILL and
	// restart it.
	Server ChaosServer

	// RestartLosesLeases says a killed and restarted server comes back
	// without its leases (Redis without persistence, memcached): two holds
	// of a key that overlap from a kill until RenewDeadline + Slack after
	// the server is back are counted as documented, not as failures, as
	// for RunChaos.
	RestartLosesLeases bool

	// Clients is how many clients (each its own backend, proxy and
	// lock.Locker) take the locks. Default: 5.
	Clients int

	// Keys is how many keys every client locks, each from a goroutine of
	// its own (so one client may hold several keys at once). Default: 2.
	Keys int

	// Duration is how long faults are injected. Default: 45s.
	// FXELECTION_CHAOS_DURATION overrides it.
	Duration time.Duration

	// Seed makes the fault schedule reproducible. Default: from the clock;
	// the report names it. FXELECTION_CHAOS_SEED overrides it.
	Seed uint64

	// Timing is the Lockers' timing. Defaults: RunChaos's (LeaseDuration
	// 3s, RenewDeadline 2s, RetryPeriod 400ms).
	Timing Timing

	// MeanGap is the mean time between two injected faults. Default:
	// 1.5 × RetryPeriod. FXELECTION_CHAOS_MEAN_GAP overrides it.
	MeanGap time.Duration

	// MaxHold bounds how long a client holds a lock before releasing it:
	// while faults are injected, three holds in four last 0 to MaxHold,
	// the others up to 2 × LeaseDuration (long enough to reach the renew
	// deadline under a partition); after, every hold lasts 0 to MaxHold.
	// Default: 2 × RetryPeriod.
	MaxHold time.Duration

	// Slack is added to the documented window and to the liveness bounds.
	// It never applies to the overlap, term and fencing checks. Default:
	// RunChaos's (2s or RetryPeriod, whichever is longer).
	Slack time.Duration
}

// withDefaults fills in the defaults, RunChaos's where they are shared,
// and returns the failover bound the long partitions are drawn against.
func (o LockChaosOptions) withDefaults() (LockChaosOptions, time.Duration) {
	co := ChaosOptions{
		Candidates: o.Clients, Duration: o.Duration, Seed: o.Seed, Timing: o.Timing,
		MeanGap: o.MeanGap, Slack: o.Slack,
	}.withDefaults()
	o.Clients, o.Duration, o.Seed, o.Timing = co.Candidates, co.Duration, co.Seed, co.Timing
	o.MeanGap, o.Slack = co.MeanGap, co.Slack
	if o.Keys == 0 {
		o.Keys = 2
	}
	if o.MaxHold == 0 {
		o.MaxHold = 2 * o.Timing.RetryPeriod
	}
	return o, co.FailoverBound
}

// LockKeyStats is what RunLockChaos saw of one key.
type LockKeyStats struct {
	Key          string `json:"key"`
	Acquisitions int    `json:"acquisitions"`
	FirstTerm    uint64 `json:"first_term"`
	LastTerm     uint64 `json:"last_term"`
}

// LockChaosReport is what RunLockChaos measured. Durations are on one
// monotonic clock.
type LockChaosReport struct {
	Seed     uint64         `json:"seed"`
	Clients  int            `json:"clients"`
	Keys     []LockKeyStats `json:"keys"`
	Duration time.Duration  `json:"duration"` // of the fault schedule, as run
	Timing   Timing         `json:"timing"`
	Slack    time.Duration  `json:"slack"`

	// Faults counts injected faults by kind; TotalFaults is their sum.
	Faults      map[string]int `json:"faults"`
	TotalFaults int            `json:"total_faults"`
	// Lockers is how many clients were started (restarts included).
	Lockers int `json:"lockers"`

	// Acquisitions counts the locks taken, every key; Lost those whose
	// Context ended with ErrLost (not by Release), LostAtReturn those
	// whose Context had already ended when Acquire returned. Released
	// counts the holds ended by Release (the client's or Close's).
	Acquisitions int `json:"acquisitions"`
	Released     int `json:"released"`
	Lost         int `json:"lost"`
	LostAtReturn int `json:"lost_at_return"`
	// AcquireTimeouts counts Acquire calls whose context (2 × LeaseDuration)
	// ended first.
	AcquireTimeouts int `json:"acquire_timeouts"`

	// Overlaps counts pairs of holds of one key whose Contexts were live at
	// the same instant outside documented windows (must be 0);
	// DocumentedOverlaps those inside (RestartLosesLeases),
	// MaxDocumentedOverlap the longest.
	// Documented lists the first few documented overlaps with their
	// reason.
	Overlaps             int           `json:"overlaps"`
	DocumentedOverlaps   int           `json:"documented_overlaps"`
	MaxDocumentedOverlap time.Duration `json:"max_documented_overlap"`
	Documented           []string      `json:"documented"`
	// ConcurrentKeys counts pairs of holds of different keys that were live
	// at the same instant: the keys are independent.
	ConcurrentKeys int `json:"concurrent_keys"`
	// ContextEnd: a holder cut off from the store (partition, refused
	// connections, crash, server down, whole-cluster outage) whose lock
	// was lost → its Context ended (RenewDeadline at most, measured from
	// its last successful renewal, which came before the cut).
	ContextEnd ChaosStats `json:"context_end"`

	// Fenced writes, made under a live Context to an in-process log per key
	// that refuses terms lower than the highest it accepted: Accepted;
	// LiveRefused, refused while the writer's Context was live (must be 0
	// outside documented windows); StaleRefused and StaleAccepted, late
	// writes (a holder that kept its term past its hold, as a paused
	// process would) refused, or accepted because no newer term had
	// written yet.
	FencedAccepted int `json:"fenced_accepted"`
	LiveRefused    int `json:"live_refused"`
	StaleRefused   int `json:"stale_refused"`
	StaleAccepted  int `json:"stale_accepted"`

	// ReleaseErrors counts Release and Close calls that returned an error
	// (the lease then expires); ReleaseErrorSamples quotes the first few.
	ReleaseErrors       int      `json:"release_errors"`
	ReleaseErrorSamples []string `json:"release_error_samples"`

	// Quiet is how long after the faults stopped (everything healed, the
	// server up, every client running) every client had taken every key.
	Quiet time.Duration `json:"quiet"`

	// Violations lists every invariant that failed; RunLockChaos fails the
	// test when it is not empty.
	Violations []string `json:"violations"`
}

// String formats the report for logs and RELIABILITY.md.
func (r *LockChaosReport) String() string {
	var b strings.Builder
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	kinds := make([]string, 0, len(r.Faults))
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "seed %d, %d clients, %d keys, %v of faults, timing lease %v / renew deadline %v / retry %v, slack %v\n",
		r.Seed, r.Clients, len(r.Keys), ms(r.Duration), r.Timing.LeaseDuration, r.Timing.RenewDeadline, r.Timing.RetryPeriod, r.Slack)
	fmt.Fprintf(&b, "faults injected: %d (", r.TotalFaults)
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Faults[k])
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "lockers started: %d; acquisitions: %d (released %d, lost %d, of which %d already lost when Acquire returned); Acquire timeouts: %d\n",
		r.Lockers, r.Acquisitions, r.Released, r.Lost, r.LostAtReturn, r.AcquireTimeouts)
	for _, k := range r.Keys {
		fmt.Fprintf(&b, "key %s: %d acquisitions, terms %d … %d\n", k.Key, k.Acquisitions, k.FirstTerm, k.LastTerm)
	}
	fmt.Fprintf(&b, "overlaps: %d outside documented windows, %d documented (longest %v); holds of different keys at once: %d\n",
		r.Overlaps, r.DocumentedOverlaps, ms(r.MaxDocumentedOverlap), r.ConcurrentKeys)
	for _, d := range r.Documented {
		b.WriteString("  documented: " + d + "\n")
	}
	fmt.Fprintf(&b, "Context end of a lost lock after its holder was cut off: %v (renew deadline %v)\n", r.ContextEnd, r.Timing.RenewDeadline)
	fmt.Fprintf(&b, "fenced writes: %d accepted, %d refused while live, %d late writes refused, %d late writes accepted\n",
		r.FencedAccepted, r.LiveRefused, r.StaleRefused, r.StaleAccepted)
	fmt.Fprintf(&b, "every client took every key %v after the faults stopped\n", ms(r.Quiet))
	fmt.Fprintf(&b, "releases with an error: %d %q; violations: %d", r.ReleaseErrors, r.ReleaseErrorSamples, len(r.Violations))
	for _, v := range r.Violations {
		b.WriteString("\n  - " + v)
	}
	return b.String()
}

// RunLockChaos runs Clients clients taking fenced locks (package lock) on
// Keys keys of a real store, each client with its own backend (NewClient)
// behind its own Proxy and its own lock.Locker, and injects RunChaos's
// faults on a seeded random schedule for Duration: partitions of one client
// (shorter than RenewDeadline, up to LeaseDuration, longer than the
// failover bound), refused connections, resets, latency, crashes (the
// client cut off and abandoned without releasing, restarted within a
// lease), graceful stops (Locker.Close, restarted), server kill -9 and
// restart when Server is set, and whole-cluster outages. Faults aim at a
// client holding a lock six times in ten.
//
// Every client locks each key from a goroutine of its own, in a loop:
// Acquire with a timeout of 2 × LeaseDuration, hold for a random time
// while writing, under the Lock's Context, to an in-process fenced log of
// the key every RetryPeriod/4 (the token read from the Context with
// fence.FromContext; the log refuses terms lower than the highest it
// accepted), Release, pause up to RetryPeriod/2. One write in twenty is
// written again up to two leases later whatever happened meanwhile, as a
// paused process would. A hold is the lock's Context lifetime: from
// Acquire's return to the Context's end, which is when Release began or
// when the Locker's Observer reported the loss (synchronously, as the
// Context is cancelled). RunLockChaos fails t when:
//
//   - two holds of one key overlap, outside the window RestartLosesLeases
//     documents (a Lock's Context ends at its renew deadline, before the
//     lease can expire in the store; the windows the lock package names
//     for a paused process and a late write are what the fencing term is
//     for, and what the late writes exercise);
//   - the terms of a key, in the order the acquisitions returned (which
//     is the store's order: a key is taken again only after the previous
//     lease ended, which is after its Acquire returned or a lease later),
//     do not strictly increase, or two acquisitions share a term;
//   - the fenced log refused a write made under a live Context, or ever
//     accepted a term lower than one it accepted before;
//   - a Lock's Context does not carry its key and term as the fencing
//     token, a lock's Context never ends, or the Observer's events do not
//     pair with the acquisitions (one end per Lock);
//   - after the faults stopped, some client did not take every key within
//     a minute or 20 leases (progress, not speed), or no two keys were
//     ever held at once (independence).
//
// The environment variables of RunChaos (FXELECTION_CHAOS_DURATION,
// _SEED, _MEAN_GAP, _REPORT) apply. What it cannot see is RunChaos's list:
// one host and one clock, no process pauses, no replica failover, TCP
// faults only.
func RunLockChaos(t *testing.T, opts LockChaosOptions) *LockChaosReport {
	t.Helper()
	if opts.Target == "" || opts.NewClient == nil {
		t.Fatal("electiontest: RunLockChaos needs LockChaosOptions.Target and NewClient")
	}
	chaosEnv(t, &opts.Duration, &opts.MeanGap, &opts.Seed)
	opts, failoverBound := opts.withDefaults()
	if err := (lock.Options{
		Identity: "lockchaos", LeaseDuration: opts.Timing.LeaseDuration,
		RenewDeadline: opts.Timing.RenewDeadline, RetryPeriod: opts.Timing.RetryPeriod,
	}).Validate(); err != nil {
		t.Fatalf("electiontest: RunLockChaos timing: %v", err)
	}
	lc := newLockChaos(t, opts, failoverBound)
	lc.run()
	rep := lc.analyse()
	t.Logf("lock chaos report:\n%s", rep)
	writeChaosReport(t, rep)
	reportViolations(t, rep.Seed, rep.Violations)
	return rep
}

// lockChaosWeights are RunChaos's weights without Resign (a lock's
// Release is the clients' everyday work).
var lockChaosWeights = []faultWeight{
	{faultPartitionShort, 4}, {faultPartitionMid, 3}, {faultPartitionLong, 2}, {faultLatency, 3},
	{faultRefuse, 1}, {faultReset, 2}, {faultCrash, 3}, {faultStop, 2},
	{faultServerKill, 1}, {faultOutage, 1},
}

// lockChaos is one RunLockChaos run. The scheduler goroutine (run) owns
// slots, faults and the fault state; mu guards what the clients' workers,
// observers and late writers record.
type lockChaos struct {
	faultSched // clock, random source, due actions, the server

	t             *testing.T
	o             LockChaosOptions
	failoverBound time.Duration
	keys          []string
	keyIndex      map[string]int
	ctx           context.Context // ends when the run ends (late writers stop)
	cancel        context.CancelFunc
	wg            sync.WaitGroup // stops, late writes, server restarts

	// scheduler state
	slots      []*lockSlot
	faults     []lockFault
	faultCount map[string]int
	outage     bool
	nextID     int
	quiet      time.Duration
	calm       atomic.Bool // the faults stopped: short holds only

	mu           sync.Mutex
	all          []*lockClient
	logs         []*fencedLog // per key
	violations   []string
	timeouts     int
	releaseErrs  int
	releaseSamps []string
}

// lockSlot is one client position: at most one running client at a time.
type lockSlot struct {
	idx      int
	gen      int // identity generation
	cl       *lockClient
	prev     *lockClient // stopping, before a restart
	fault    string      // active proxy fault, "" if none
	faultSeq int
}

// lockClient is one client: its proxy, backend and Locker, and a worker
// goroutine per key.
type lockClient struct {
	id          int
	identity    string
	proxy       *Proxy
	closeClient func()
	locker      *lock.Locker
	ctx         context.Context // ends when the client stops or crashes
	cancel      context.CancelFunc
	crashed     atomic.Bool
	workers     sync.WaitGroup
	started     time.Duration
	stopAt      time.Duration // when a stop or crash began; 0 while running
	stopped     chan struct{} // closed once stopped and closed

	// under lockChaos.mu, per key
	holds    [][]*lockHold
	ends     [][]lockEnd // the Observer's EventRelease and EventLost, in order
	acquired []int       // the Observer's EventAcquire with OutcomeAcquired
	holding  int         // holds in progress, any key
}

// lockHold is one acquisition and its hold.
type lockHold struct {
	cl           *lockClient
	key          int
	term         uint64
	acquired     time.Duration // when Acquire returned
	releaseStart time.Duration // when the client began Release; -1 if it did not
	// set by analyse
	end   time.Duration // when the Context ended
	lost  bool
	cause string
}

// lockEnd is the end of a Lock's Context, as the Observer reported it.
type lockEnd struct {
	at    time.Duration
	lost  bool
	cause string
}

// fencedLog is a key's fenced resource: it refuses terms lower than the
// highest it accepted.
type fencedLog struct {
	highest       uint64
	log           []fencedWrite // accepted, in order
	refusedLive   []fencedWrite
	staleRefused  int
	staleAccepted int
}

type fencedWrite struct {
	at      time.Duration
	term    uint64
	highest uint64 // for a refusal: the highest accepted term then
	late    bool
	hold    *lockHold // nil for a late write
}

type lockFault struct {
	kind       string
	cl         *lockClient
	start, end time.Duration // end -1: until the server came back, or the client stopped
}

// lockObserver adapts a function to lock.Observer.
type lockObserver func(lock.Event)

func (f lockObserver) ObserveLock(ev lock.Event) { f(ev) }

func newLockChaos(t *testing.T, o LockChaosOptions, failoverBound time.Duration) *lockChaos {
	ctx, cancel := context.WithCancel(context.Background())
	lc := &lockChaos{
		t: t, o: o, failoverBound: failoverBound,
		keyIndex:   map[string]int{},
		ctx:        ctx,
		cancel:     cancel,
		faultCount: map[string]int{},
	}
	lc.faultSched = newFaultSched(o.Seed, o.Server, &lc.wg)
	run := fmt.Sprintf("%d-%d", o.Seed%1_000_000, time.Now().UnixNano()%1_000_000)
	for k := range o.Keys {
		key := fmt.Sprintf("lockchaos-%s-k%d", run, k)
		lc.keys = append(lc.keys, key)
		lc.keyIndex[key] = k
		lc.logs = append(lc.logs, &fencedLog{})
	}
	return lc
}

func (lc *lockChaos) violate(format string, args ...any) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.violations = append(lc.violations, fmt.Sprintf(format, args...))
}

// newLockClient returns a client with its per-key records, not started.
func newLockClient(id int, identity string, keys int) *lockClient {
	cl := &lockClient{
		id: id, identity: identity, stopped: make(chan struct{}),
		holds: make([][]*lockHold, keys), ends: make([][]lockEnd, keys), acquired: make([]int, keys),
	}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	return cl
}

// start starts a client in s with a new backend behind a new proxy.
func (lc *lockChaos) start(s *lockSlot) error {
	p, err := NewProxy(lc.o.Target)
	if err != nil {
		return err
	}
	if lc.outage {
		p.Partition()
	}
	b, closeClient, err := lc.o.NewClient(p.Addr())
	if err != nil {
		_ = p.Close()
		return fmt.Errorf("new client: %w", err)
	}
	lc.nextID++
	cl := newLockClient(lc.nextID, fmt.Sprintf("lockchaos-%d.%d", s.idx, s.gen), lc.o.Keys)
	cl.proxy, cl.closeClient = p, closeClient
	tm := lc.o.Timing
	locker, err := lock.New(b, lock.Options{
		Identity:      cl.identity,
		LeaseDuration: tm.LeaseDuration,
		RenewDeadline: tm.RenewDeadline,
		RetryPeriod:   tm.RetryPeriod,
		Observer:      lockObserver(func(ev lock.Event) { lc.observe(cl, ev) }),
	})
	if err != nil {
		_ = p.Close()
		closeClient()
		return fmt.Errorf("new locker: %w", err)
	}
	cl.locker = locker
	cl.started = lc.now()
	lc.mu.Lock()
	lc.all = append(lc.all, cl)
	lc.mu.Unlock()
	for k := range lc.keys {
		cl.workers.Add(1)
		go lc.worker(cl, k)
	}
	s.cl = cl
	return nil
}

// observe records a Locker's events: acquisitions, and the end of every
// Lock's Context (reported synchronously as it is cancelled, so its time
// is the end's).
func (lc *lockChaos) observe(cl *lockClient, ev lock.Event) {
	at := lc.now()
	k, ok := lc.keyIndex[ev.Key]
	if !ok {
		lc.violate("%s: event for unknown key %q", cl.identity, ev.Key)
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	switch ev.Kind {
	case lock.EventAcquire:
		if ev.Outcome == lock.OutcomeAcquired {
			cl.acquired[k]++
		}
	case lock.EventRelease:
		cl.ends[k] = append(cl.ends[k], lockEnd{at: at})
	case lock.EventLost:
		cause := ""
		if ev.Err != nil {
			cause = ev.Err.Error()
		}
		cl.ends[k] = append(cl.ends[k], lockEnd{at: at, lost: true, cause: cause})
	}
}

// worker locks key k for cl until cl stops.
func (lc *lockChaos) worker(cl *lockClient, k int) {
	defer cl.workers.Done()
	tm := lc.o.Timing
	for cl.ctx.Err() == nil {
		actx, cancel := context.WithTimeout(cl.ctx, 2*tm.LeaseDuration)
		lk, err := cl.locker.Acquire(actx, lc.keys[k])
		at := lc.now()
		cancel()
		if err != nil {
			if cl.ctx.Err() != nil {
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				lc.violate("%s: Acquire %s: %v", cl.identity, lc.keys[k], err)
				return
			}
			lc.mu.Lock()
			lc.timeouts++
			lc.mu.Unlock()
			continue
		}
		h := &lockHold{cl: cl, key: k, term: lk.Term(), acquired: at, releaseStart: -1}
		lc.mu.Lock()
		cl.holds[k] = append(cl.holds[k], h)
		cl.holding++
		lc.mu.Unlock()
		lc.hold(cl, k, lk, h)
		lc.mu.Lock()
		cl.holding--
		lc.mu.Unlock()
		if cl.crashed.Load() {
			// Abandoned: no release. The proxy is cut, so no renewal
			// succeeds and the Context ends at the renew deadline.
			select {
			case <-lk.Context().Done():
			case <-time.After(tm.RenewDeadline + time.Minute):
				lc.violate("%s: the Context of its abandoned lock on %s (term %d) did not end", cl.identity, lc.keys[k], h.term)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = lk.Release(ctx) // ends the renewals
			}
			return
		}
		rs := lc.now()
		lc.mu.Lock()
		h.releaseStart = rs
		lc.mu.Unlock()
		rctx, rcancel := context.WithTimeout(context.Background(), tm.LeaseDuration)
		if err := lk.Release(rctx); err != nil {
			lc.releaseError(cl, err)
		}
		rcancel()
		pause := time.NewTimer(time.Duration(rand.Int64N(int64(tm.RetryPeriod/2) + 1)))
		select {
		case <-pause.C:
		case <-cl.ctx.Done():
			pause.Stop()
		}
	}
}

// hold holds lk for a random time, or until its Context or the client
// ends, writing the fenced log every RetryPeriod/4.
func (lc *lockChaos) hold(cl *lockClient, k int, lk *lock.Lock, h *lockHold) {
	tm := lc.o.Timing
	d := time.Duration(rand.Int64N(int64(lc.o.MaxHold) + 1))
	if rand.N(4) == 0 && !lc.calm.Load() {
		d = time.Duration(rand.Int64N(int64(2*tm.LeaseDuration) + 1))
	}
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(tm.RetryPeriod / 4)
	defer tick.Stop()
	for {
		lc.fencedWrite(cl, k, lk, h)
		select {
		case <-lk.Context().Done():
			return
		case <-cl.ctx.Done():
			return
		case <-done.C:
			return
		case <-tick.C:
		}
	}
}

// fencedWrite writes the key's fenced log with the token of lk's Context,
// while that Context is live.
func (lc *lockChaos) fencedWrite(cl *lockClient, k int, lk *lock.Lock, h *lockHold) {
	lctx := lk.Context()
	tok, err := fence.FromContext(lctx)
	if err != nil || tok.Term != h.term || tok.Election != lc.keys[k] {
		lc.violate("%s: the Context of its lock on %s (term %d) carries the token %+v (%v)", cl.identity, lc.keys[k], h.term, tok, err)
		return
	}
	at := lc.now()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lctx.Err() != nil {
		return // not live: no write
	}
	f := lc.logs[k]
	if tok.Term < f.highest {
		f.refusedLive = append(f.refusedLive, fencedWrite{at: at, term: tok.Term, highest: f.highest, hold: h})
		return
	}
	f.highest = tok.Term
	f.log = append(f.log, fencedWrite{at: at, term: tok.Term, hold: h})
	if rand.N(20) == 0 {
		lc.lateWrite(k, tok.Term)
	}
}

// lateWrite writes term to key k's log after a pause of up to two leases,
// whatever happened meanwhile. Called with mu held.
func (lc *lockChaos) lateWrite(k int, term uint64) {
	pause := time.Duration(rand.Int64N(int64(2 * lc.o.Timing.LeaseDuration)))
	lc.wg.Add(1)
	go func() {
		defer lc.wg.Done()
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-lc.ctx.Done():
			return
		}
		at := lc.now()
		lc.mu.Lock()
		defer lc.mu.Unlock()
		f := lc.logs[k]
		if term < f.highest {
			f.staleRefused++
			return
		}
		f.highest = term
		f.staleAccepted++
		f.log = append(f.log, fencedWrite{at: at, term: term, late: true})
	}()
}

func (lc *lockChaos) releaseError(cl *lockClient, err error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.releaseErrs++
	if len(lc.releaseSamps) < 5 {
		lc.releaseSamps = append(lc.releaseSamps, fmt.Sprintf("%s at %v: %v", cl.identity, lc.now().Round(time.Millisecond), err))
	}
}

// stop stops cl in the background: gracefully (its workers release, then
// Locker.Close), or as a crash (the proxy already cut everything; the
// workers abandon their locks and wait for their Contexts to end).
func (lc *lockChaos) stop(cl *lockClient, crash bool) {
	cl.stopAt = lc.now()
	if crash {
		cl.crashed.Store(true)
	}
	cl.cancel()
	lc.wg.Add(1)
	go func() {
		defer lc.wg.Done()
		cl.workers.Wait()
		if !crash {
			ctx, cancel := context.WithTimeout(context.Background(), lc.o.Timing.LeaseDuration)
			if err := cl.locker.Close(ctx); err != nil {
				lc.releaseError(cl, err)
			}
			cancel()
		}
		_ = cl.proxy.Close()
		cl.closeClient()
		close(cl.stopped)
	}()
}

// restartLater starts a new client in s once its previous one stopped, no
// earlier than at.
func (lc *lockChaos) restartLater(s *lockSlot, at time.Duration, newIdentity bool) {
	var try func()
	try = func() {
		if s.prev != nil {
			select {
			case <-s.prev.stopped:
			default:
				lc.schedule(lc.now()+20*time.Millisecond, try)
				return
			}
		}
		if lc.aborted {
			return
		}
		s.prev = nil
		if newIdentity {
			s.gen++
		}
		if err := lc.start(s); err != nil {
			lc.violate("restart client %d: %v", s.idx, err)
			lc.aborted = true
		}
	}
	lc.schedule(at, try)
}

func (lc *lockChaos) run() {
	lc.t0 = time.Now()
	for i := range lc.o.Clients {
		s := &lockSlot{idx: i}
		lc.slots = append(lc.slots, s)
		if err := lc.start(s); err != nil {
			lc.violate("start client %d: %v", i, err)
			lc.aborted = true
			break
		}
	}
	ran := lc.runFaults(lc.o.Duration, lc.o.MeanGap, lc.inject, lc.serverBack)
	lc.quiesce()
	for _, s := range lc.slots {
		if s.cl != nil {
			lc.stop(s.cl, false)
		}
	}
	for _, s := range lc.slots {
		if s.cl != nil {
			<-s.cl.stopped
		}
		if s.prev != nil {
			<-s.prev.stopped
		}
	}
	lc.cancel()
	lc.wg.Wait()
	lc.o.Duration = ran
}

// pick chooses a target among running clients that pass ok: one holding a
// lock more often than not.
func (lc *lockChaos) pick(ok func(*lockSlot) bool) *lockSlot {
	var cands, holding []*lockSlot
	lc.mu.Lock()
	for _, s := range lc.slots {
		if s.cl != nil && ok(s) {
			cands = append(cands, s)
			if s.cl.holding > 0 {
				holding = append(holding, s)
			}
		}
	}
	lc.mu.Unlock()
	if len(cands) == 0 {
		return nil
	}
	if len(holding) > 0 && lc.rng.IntN(10) < 6 {
		return holding[lc.rng.IntN(len(holding))]
	}
	return cands[lc.rng.IntN(len(cands))]
}

// inject injects one fault drawn from the schedule.
func (lc *lockChaos) inject() {
	kind := drawFault(lc.rng, lockChaosWeights)
	tm := lc.o.Timing
	now := lc.now()
	free := func(s *lockSlot) bool { return s.fault == "" && !lc.outage }
	switch kind {
	case faultPartitionShort, faultPartitionMid, faultPartitionLong, faultLatency, faultRefuse:
		s := lc.pick(free)
		if s == nil {
			return
		}
		lat, d := lc.proxyFaultSpan(kind, tm, lc.failoverBound, lc.o.Slack)
		startProxyFault(s.cl.proxy, kind, lat)
		lc.proxyFault(s, kind, now, d)
	case faultReset:
		s := lc.pick(free)
		if s == nil {
			return
		}
		s.cl.proxy.Sever()
		lc.record(kind, s.cl, now, now)
	case faultCrash:
		s := lc.pick(func(*lockSlot) bool { return true })
		if s == nil {
			return
		}
		cl := s.cl
		cl.proxy.Sever()
		cl.proxy.Partition()
		lc.record(kind, cl, now, -1)
		lc.stop(cl, true)
		s.cl, s.prev, s.fault = nil, cl, ""
		s.faultSeq++
		lc.restartLater(s, now+lc.between(0, tm.LeaseDuration), lc.rng.IntN(2) == 0)
	case faultStop:
		s := lc.pick(free)
		if s == nil {
			return
		}
		cl := s.cl
		lc.record(kind, cl, now, now)
		lc.stop(cl, false)
		s.cl, s.prev = nil, cl
		s.faultSeq++
		lc.restartLater(s, now+lc.between(0, tm.LeaseDuration), false)
	case faultServerKill:
		if lc.server == nil || lc.serverDown || lc.outage {
			return
		}
		if err := lc.killServer(now, tm); err != nil {
			lc.violate("kill server: %v", err)
			lc.aborted = true
			return
		}
		lc.faultCount[kind]++
		for _, s := range lc.slots {
			if s.cl != nil {
				lc.faults = append(lc.faults, lockFault{kind: kind, cl: s.cl, start: now, end: -1})
			}
		}
	case faultOutage:
		if lc.outage || lc.serverDown {
			return
		}
		lc.outage = true
		lc.faultCount[kind]++
		d := lc.outageSpan(tm, lc.failoverBound)
		for i := range lc.faults {
			if lc.faults[i].end < 0 && lc.faults[i].kind != faultServerKill && lc.faults[i].kind != faultCrash {
				lc.faults[i].end = now // replaced by the outage
			}
		}
		for _, s := range lc.slots {
			s.fault = faultOutage // cancels pending heals; healAll ends it
			s.faultSeq++
			if s.cl != nil {
				s.cl.proxy.Partition()
				lc.faults = append(lc.faults, lockFault{kind: kind, cl: s.cl, start: now, end: now + d})
			}
		}
		lc.schedule(now+d, lc.healAll)
	}
}

func (lc *lockChaos) record(kind string, cl *lockClient, start, end time.Duration) {
	lc.faultCount[kind]++
	lc.faults = append(lc.faults, lockFault{kind: kind, cl: cl, start: start, end: end})
}

// proxyFault records a fault on s's proxy and heals it after d (unless
// something else healed or replaced it first).
func (lc *lockChaos) proxyFault(s *lockSlot, kind string, now, d time.Duration) {
	lc.record(kind, s.cl, now, -1)
	s.fault = kind
	s.faultSeq++
	seq, cl, idx := s.faultSeq, s.cl, len(lc.faults)-1
	lc.schedule(now+d, func() {
		if s.faultSeq != seq || s.cl != cl {
			return
		}
		cl.proxy.Heal()
		s.fault = ""
		lc.faults[idx].end = lc.now()
	})
}

// healAll heals every proxy and clears every slot fault.
func (lc *lockChaos) healAll() {
	now := lc.now()
	for _, s := range lc.slots {
		if s.cl != nil {
			s.cl.proxy.Heal()
		}
		s.fault = ""
		s.faultSeq++
	}
	for i := range lc.faults {
		if lc.faults[i].end < 0 && lc.faults[i].kind != faultServerKill && lc.faults[i].kind != faultCrash {
			lc.faults[i].end = now
		}
	}
	lc.outage = false
}

func (lc *lockChaos) serverBack(err error) {
	if err != nil {
		lc.violate("restart server: %v", err)
		lc.aborted = true
		return
	}
	now := lc.serverUp()
	for i := range lc.faults {
		if lc.faults[i].kind == faultServerKill && lc.faults[i].end < 0 {
			lc.faults[i].end = now
		}
	}
}

// quiesce stops the faults: it heals every proxy, brings the server back,
// restarts every stopped client, then waits until every client has taken
// every key (progress).
func (lc *lockChaos) quiesce() {
	lc.calm.Store(true)
	lc.healAll()
	if err := lc.bringServerBack(lc.serverBack); err != nil {
		lc.violate("%v", err)
		lc.aborted = true
	}
	lc.pending = nil // restarts run now; heals are done
	for _, s := range lc.slots {
		if s.cl == nil && !lc.aborted {
			if s.prev != nil {
				<-s.prev.stopped
				s.prev = nil
			}
			if err := lc.start(s); err != nil {
				lc.violate("restart client %d: %v", s.idx, err)
				lc.aborted = true
			}
		}
	}
	if lc.aborted {
		return
	}
	from := lc.now()
	limit := max(time.Minute, 20*lc.o.Timing.LeaseDuration) + lc.o.Slack
	deadline := time.Now().Add(limit)
	for {
		missing := lc.notTakenSince(from)
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			lc.violate("no progress: %s within %v after the faults stopped", missing, limit)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	lc.quiet = lc.now() - from
}

// notTakenSince names a running client that has not taken some key since
// from, or returns "".
func (lc *lockChaos) notTakenSince(from time.Duration) string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, s := range lc.slots {
		for k, hs := range s.cl.holds {
			if len(hs) == 0 || hs[len(hs)-1].acquired < from {
				return fmt.Sprintf("%s had not taken %s", s.cl.identity, lc.keys[k])
			}
		}
	}
	return ""
}

// analyse checks the invariants on what was recorded and fills the report.
// It runs after every client stopped.
func (lc *lockChaos) analyse() *LockChaosReport {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	tm := lc.o.Timing
	r := &LockChaosReport{
		Seed: lc.o.Seed, Clients: lc.o.Clients, Duration: lc.o.Duration, Timing: tm, Slack: lc.o.Slack,
		Faults: lc.faultCount, Lockers: len(lc.all), AcquireTimeouts: lc.timeouts,
		ReleaseErrors: lc.releaseErrs, ReleaseErrorSamples: lc.releaseSamps, Quiet: lc.quiet,
	}
	for _, n := range lc.faultCount {
		r.TotalFaults += n
	}
	violate := func(format string, args ...any) {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	}
	r.Violations = append(r.Violations, lc.violations...)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	documented := func(lo, hi time.Duration) bool {
		return lc.o.RestartLosesLeases && inRestartWindow(lc.downWindows, tm.RenewDeadline+lc.o.Slack, lo, hi)
	}
	// reason names the restart window that documents [lo, hi].
	reason := func(lo, hi time.Duration) string {
		for _, w := range lc.downWindows {
			if inRestartWindow([]window{w}, tm.RenewDeadline+lc.o.Slack, lo, hi) {
				return fmt.Sprintf("the server, killed at %v and back at %v, lost its leases (RestartLosesLeases); the earlier holder's renewals fail within the renew deadline", ms(w.start), ms(w.end))
			}
		}
		return ""
	}

	// Each hold ends when its Context ended: the n-th end the Observer
	// reported for the client's key (one worker per key, so its Locks
	// end in order), or when the client began Release, if earlier.
	perKey := make([][]*lockHold, len(lc.keys))
	for _, cl := range lc.all {
		for k := range lc.keys {
			holds, ends := cl.holds[k], cl.ends[k]
			if len(ends) != len(holds) || cl.acquired[k] != len(holds) {
				violate("%s on %s: %d acquisitions returned, %d reported by the Observer, %d Context ends reported",
					cl.identity, lc.keys[k], len(holds), cl.acquired[k], len(ends))
			}
			for i, h := range holds {
				h.end = -1
				if i < len(ends) {
					h.end, h.lost, h.cause = ends[i].at, ends[i].lost, ends[i].cause
				}
				if h.releaseStart >= 0 && (h.end < 0 || h.releaseStart < h.end) {
					h.end = h.releaseStart
				}
				if h.end < 0 {
					violate("%s: the Context of its lock on %s (term %d, acquired at %v) never ended", cl.identity, lc.keys[k], h.term, ms(h.acquired))
					h.end = h.acquired
				}
				switch {
				case h.lost:
					r.Lost++
					if h.end <= h.acquired {
						r.LostAtReturn++
					}
				case i < len(ends):
					r.Released++
				}
				perKey[k] = append(perKey[k], h)
			}
		}
	}

	for k, hs := range perKey {
		sort.Slice(hs, func(i, j int) bool { return hs[i].acquired < hs[j].acquired })
		ks := LockKeyStats{Key: lc.keys[k], Acquisitions: len(hs)}
		r.Acquisitions += len(hs)
		// Terms strictly increase in the store's order of acquisition,
		// and no two acquisitions share one.
		byTerm := map[uint64]*lockHold{}
		for i, h := range hs {
			if i == 0 || h.term < ks.FirstTerm {
				ks.FirstTerm = h.term
			}
			ks.LastTerm = max(ks.LastTerm, h.term)
			if o, dup := byTerm[h.term]; dup {
				violate("%s: term %d taken twice: by %s at %v and by %s at %v", lc.keys[k], h.term, o.cl.identity, ms(o.acquired), h.cl.identity, ms(h.acquired))
			}
			byTerm[h.term] = h
			if i > 0 {
				p := hs[i-1]
				if h.term < p.term && !documented(h.acquired, h.acquired) {
					violate("%s: term %d taken by %s at %v after term %d taken by %s at %v",
						lc.keys[k], h.term, h.cl.identity, ms(h.acquired), p.term, p.cl.identity, ms(p.acquired))
				}
			}
		}
		r.Keys = append(r.Keys, ks)

		// No two holds of the key overlap.
		for i, a := range hs {
			if a.end <= a.acquired {
				continue
			}
			for _, b := range hs[i+1:] {
				if b.acquired >= a.end {
					break // sorted by acquisition: no later one overlaps a
				}
				if b.end <= b.acquired {
					continue
				}
				lo, hi := b.acquired, min(a.end, b.end)
				if documented(lo, hi) {
					r.DocumentedOverlaps++
					r.MaxDocumentedOverlap = max(r.MaxDocumentedOverlap, hi-lo)
					if len(r.Documented) < 5 {
						r.Documented = append(r.Documented, fmt.Sprintf("%s held by %s (term %d) and %s (term %d) at once from %v to %v: %s",
							lc.keys[k], a.cl.identity, a.term, b.cl.identity, b.term, ms(lo), ms(hi), reason(lo, hi)))
					}
					continue
				}
				r.Overlaps++
				violate("%s held by %s (term %d, %v…%v%s) and %s (term %d, %v…%v%s) at once from %v to %v; faults on %s: %s; on %s: %s",
					lc.keys[k], a.cl.identity, a.term, ms(a.acquired), ms(a.end), causeOf(a), b.cl.identity, b.term, ms(b.acquired), ms(b.end), causeOf(b),
					ms(lo), ms(hi), a.cl.identity, lc.history(a.cl, hi), b.cl.identity, lc.history(b.cl, hi))
			}
		}
	}

	// The keys are independent: holds of different keys were live at once.
	for k := 1; k < len(perKey); k++ {
		for j := range k {
			r.ConcurrentKeys += concurrent(perKey[j], perKey[k])
		}
	}
	if len(perKey) > 1 && r.ConcurrentKeys == 0 {
		violate("no two keys were ever held at the same instant")
	}

	// The fenced logs.
	for k, f := range lc.logs {
		r.StaleRefused += f.staleRefused
		r.StaleAccepted += f.staleAccepted
		for i, w := range f.log {
			if !w.late {
				r.FencedAccepted++
			}
			if i > 0 && w.term < f.log[i-1].term {
				violate("%s: the fenced log accepted term %d at %v after term %d", lc.keys[k], w.term, ms(w.at), f.log[i-1].term)
			}
		}
		for _, w := range f.refusedLive {
			if documented(w.at, w.at) {
				continue
			}
			r.LiveRefused++
			violate("%s: the fenced log refused term %d of %s at %v while its Context was live (highest %d)",
				lc.keys[k], w.term, w.hold.cl.identity, ms(w.at), w.highest)
		}
	}

	// A holder cut off from the store: its lost lock's Context ends within
	// the renew deadline of its last successful renewal (measured, not
	// checked: the overlap check is what that promise is for).
	var ctxEnds []time.Duration
	for _, f := range lc.faults {
		switch f.kind {
		case faultPartitionMid, faultPartitionLong, faultRefuse, faultCrash, faultServerKill, faultOutage:
		default:
			continue
		}
		for _, hs := range f.cl.holds {
			for _, h := range hs {
				if h.lost && h.acquired <= f.start && h.end > f.start && (f.end < 0 || h.end <= f.end) {
					ctxEnds = append(ctxEnds, h.end-f.start)
				}
			}
		}
	}
	r.ContextEnd = statsOf(ctxEnds)
	return r
}

// concurrent counts the pairs of holds of as and bs (each sorted by
// acquisition) that were live at the same instant.
func concurrent(as, bs []*lockHold) int {
	n := 0
	for _, a := range as {
		if a.end <= a.acquired {
			continue
		}
		for _, b := range bs {
			if b.acquired >= a.end {
				break
			}
			if b.end > b.acquired && b.end > a.acquired {
				n++
			}
		}
	}
	return n
}

func causeOf(h *lockHold) string {
	switch {
	case h.lost:
		return ", lost: " + h.cause
	case h.releaseStart >= 0 && h.end == h.releaseStart:
		return ", released"
	}
	return ""
}

// history lists the faults on cl (and the cluster) in the 10 s before t.
func (lc *lockChaos) history(cl *lockClient, t time.Duration) string {
	out := ""
	for _, f := range lc.faults {
		if f.cl == cl && f.start <= t && f.start >= t-10*time.Second {
			end := "-"
			if f.end >= 0 {
				end = f.end.Round(time.Millisecond).String()
			}
			out += fmt.Sprintf("%s %v…%s; ", f.kind, f.start.Round(time.Millisecond), end)
		}
	}
	if out == "" {
		return "none"
	}
	return out
}
