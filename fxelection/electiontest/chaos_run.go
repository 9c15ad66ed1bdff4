package electiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Fault kinds, as counted in ChaosReport.Faults.
const (
	faultPartitionShort = "partition<renew-deadline"
	faultPartitionMid   = "partition<lease"
	faultPartitionLong  = "partition>failover-bound"
	faultLatency        = "latency"
	faultRefuse         = "refuse"
	faultReset          = "reset"
	faultCrash          = "crash"
	faultStop           = "stop"
	faultResign         = "resign"
	faultServerKill     = "server-kill"
	faultOutage         = "cluster-outage"
)

// chaos is one RunChaos run. The scheduler goroutine (run) owns slots,
// pending and the fault log; mu guards what the sampler, callbacks,
// observers and writers record.
type chaos struct {
	faultSched // clock, random source, due actions, the server

	t        *testing.T
	o        ChaosOptions
	election string
	ctx      context.Context // ends when the run ends (late writers stop)
	cancel   context.CancelFunc
	wg       sync.WaitGroup // async stops, resigns, late writers, server restarts

	// scheduler state
	slots      []*slot
	faults     []faultRec
	faultCount map[string]int
	outage     bool
	outages    []window
	handovers  []mark // a leader stopped or resigned
	crashes    []mark // a leader crashed
	converge   []time.Duration
	finalConv  time.Duration
	nextID     int

	mu             sync.Mutex
	all            []*instance
	live           []*instance // sampled
	leaders        int         // believing in the last sample round
	leader         *instance   // one of them
	highest        uint64      // the fenced resource
	fenced         fenceCounts
	liveRejects    []reject
	violations     []string
	stopErrors     int
	stopErrSamples []string
}

type fenceCounts struct{ accepted, liveRejected, staleRejected, staleAccepted int }

type reject struct {
	at            time.Duration
	inst          *instance
	term, highest uint64
}

type window struct{ start, end time.Duration }

type mark struct {
	at   time.Duration
	inst *instance
}

type action struct {
	at time.Duration
	do func()
}

// slot is one candidate position: at most one running elector at a time.
type slot struct {
	idx      int
	gen      int // identity generation
	inst     *instance
	prev     *instance // stopping, before a restart
	fault    string    // active proxy fault, "" if none
	faultSeq int
}

func (s *slot) identity() string { return fmt.Sprintf("chaos-%d.%d", s.idx, s.gen) }

// instance is one elector with its client and proxy.
type instance struct {
	id          int
	identity    string
	e           *fxelection.Elector
	proxy       *Proxy
	closeClient func()
	started     time.Duration
	stopAt      time.Duration // when a stop or crash began; 0 while running
	quit        chan struct{} // stops the writer
	writerDone  chan struct{}
	stopped     chan struct{} // closed once stopped and closed

	// under chaos.mu
	finished bool
	samples  []sampled
	open     int // index of the open sample interval, -1 if none
	cbs      []record
	evs      []record
	panics   int
	// acquireErrs are the starts of Acquire calls that failed other than
	// with a *backendkit.HeldError (the call may have undone a write).
	acquireErrs []time.Duration
}

// sampled is one leadership as the 1 ms sampler saw it: believed at every
// sample from first to last, not at end (the first sample that said no, or
// when the elector stopped).
type sampled struct {
	inst             *instance
	term             uint64
	first, last, end time.Duration
}

// record is a callback or an observer event.
type record struct {
	kind string // "start", "ctx-end", "stop", "detached"
	term uint64
	at   time.Duration
}

type faultRec struct {
	kind       string
	inst       *instance
	start, end time.Duration
}

func newChaos(t *testing.T, o ChaosOptions) *chaos {
	ctx, cancel := context.WithCancel(context.Background())
	c := &chaos{
		t: t, o: o,
		election:   fmt.Sprintf("chaos-%d-%d", o.Seed%1_000_000, time.Now().UnixNano()%1_000_000),
		ctx:        ctx,
		cancel:     cancel,
		faultCount: map[string]int{},
	}
	c.faultSched = newFaultSched(o.Seed, o.Server, &c.wg)
	return c
}

func (c *chaos) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// start starts an elector in s with a new client behind a new proxy.
func (c *chaos) start(s *slot) error {
	p, err := NewProxy(c.o.Target)
	if err != nil {
		return err
	}
	if c.outage {
		p.Partition()
	}
	b, closeClient, err := c.o.NewClient(p.Addr())
	if err != nil {
		_ = p.Close()
		return fmt.Errorf("new client: %w", err)
	}
	c.nextID++
	inst := &instance{
		id: c.nextID, identity: s.identity(), proxy: p, closeClient: closeClient, open: -1,
		quit: make(chan struct{}), writerDone: make(chan struct{}), stopped: make(chan struct{}),
	}
	tm := c.o.Timing
	e, err := fxelection.New(fxelection.Config{
		Name:          c.election,
		Identity:      inst.identity,
		Metadata:      map[string]string{"slot": fmt.Sprint(s.idx)},
		LeaseDuration: tm.LeaseDuration,
		RenewDeadline: tm.RenewDeadline,
		RetryPeriod:   tm.RetryPeriod,
		MaxBackoff:    c.maxBackoff(),
		Callbacks: fxelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				l, _ := fxelection.LeaseFromContext(ctx)
				c.note(inst, &inst.cbs, "start", l.Term)
				<-ctx.Done()
				c.note(inst, &inst.cbs, "ctx-end", l.Term)
			},
			OnStoppedLeading: func(l fxelection.Lease, _ fxelection.StopReason) {
				c.note(inst, &inst.cbs, "stop", l.Term)
			},
		},
	}, b)
	if err != nil {
		_ = p.Close()
		closeClient()
		return fmt.Errorf("new elector: %w", err)
	}
	inst.e = e
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		switch ev.Kind {
		case fxelection.EventStartedLeading:
			c.note(inst, &inst.evs, "start", ev.Lease.Term)
		case fxelection.EventStoppedLeading:
			c.note(inst, &inst.evs, "stop", ev.Lease.Term)
		case fxelection.EventDetached:
			c.note(inst, &inst.evs, "detached", 0)
		case fxelection.EventOperation:
			var held *backendkit.HeldError
			if ev.Op == fxelection.OpAcquire && ev.Err != nil && !errors.As(ev.Err, &held) {
				at := ev.Time.Add(-ev.Duration).Sub(c.t0)
				c.mu.Lock()
				inst.acquireErrs = append(inst.acquireErrs, at)
				c.mu.Unlock()
			}
		case fxelection.EventPanic:
			c.mu.Lock()
			inst.panics++
			c.mu.Unlock()
			c.violate("%s: panic reported: %v", inst.identity, ev.Err)
		}
	}))
	inst.started = c.now()
	c.mu.Lock()
	c.all = append(c.all, inst)
	c.live = append(c.live, inst)
	c.mu.Unlock()
	if err := e.Start(context.Background()); err != nil {
		return fmt.Errorf("start elector: %w", err)
	}
	go c.writer(inst)
	s.inst = inst
	return nil
}

func (c *chaos) maxBackoff() time.Duration { return 3 * c.o.Timing.RetryPeriod }

func (c *chaos) note(inst *instance, to *[]record, kind string, term uint64) {
	at := c.now()
	c.mu.Lock()
	*to = append(*to, record{kind: kind, term: term, at: at})
	c.mu.Unlock()
}

// writer writes the fenced resource from RunIfLeader every RetryPeriod/4;
// now and then it keeps its term for a late write, as a paused process
// would.
func (c *chaos) writer(inst *instance) {
	defer close(inst.writerDone)
	every := c.o.Timing.RetryPeriod / 4
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-inst.quit:
			return
		case <-tick.C:
		}
		_, _ = inst.e.RunIfLeader(c.ctx, func(ctx context.Context) error {
			l, ok := fxelection.LeaseFromContext(ctx)
			if !ok {
				c.violate("%s: RunIfLeader context carries no lease", inst.identity)
				return nil
			}
			c.fenceWrite(ctx, inst, l.Term)
			if rand.N(20) == 0 {
				c.lateWrite(l.Term)
			}
			return nil
		})
	}
}

// fenceWrite writes term while ctx (the leader context) is live.
func (c *chaos) fenceWrite(ctx context.Context, inst *instance, term uint64) {
	at := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if term < c.highest {
		c.fenced.liveRejected++
		c.liveRejects = append(c.liveRejects, reject{at: at, inst: inst, term: term, highest: c.highest})
		return
	}
	c.highest = term
	c.fenced.accepted++
}

// lateWrite writes term after a pause of up to two leases, whatever
// happened to the leadership meanwhile.
func (c *chaos) lateWrite(term uint64) {
	pause := time.Duration(rand.Int64N(int64(2 * c.o.Timing.LeaseDuration)))
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if term < c.highest {
			c.fenced.staleRejected++
		} else {
			c.highest = term
			c.fenced.staleAccepted++
		}
	}()
}

// sample runs every millisecond until done: each live elector's Lease().
func (c *chaos) sample(done <-chan struct{}, exited chan<- struct{}) {
	defer close(exited)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	type obs struct {
		inst     *instance
		lease    fxelection.Lease
		ok       bool
		finished bool
		at       time.Duration
	}
	var buf []obs
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		buf = buf[:0]
		for _, inst := range c.live {
			buf = append(buf, obs{inst: inst, finished: inst.finished})
		}
		c.mu.Unlock()
		for i := range buf {
			buf[i].lease, buf[i].ok = buf[i].inst.e.Lease()
			buf[i].at = c.now()
		}
		c.mu.Lock()
		leaders := 0
		var leader *instance
		drop := map[*instance]bool{}
		for _, o := range buf {
			inst := o.inst
			if o.ok {
				leaders++
				leader = inst
				if inst.open >= 0 && inst.samples[inst.open].term != o.lease.Term {
					inst.samples[inst.open].end = o.at
					inst.open = -1
				}
				if inst.open < 0 {
					inst.samples = append(inst.samples, sampled{inst: inst, term: o.lease.Term, first: o.at, last: o.at})
					inst.open = len(inst.samples) - 1
				}
				inst.samples[inst.open].last = o.at
				if o.finished {
					c.violations = append(c.violations, fmt.Sprintf("%s believes it leads (term %d) after Stop returned", inst.identity, o.lease.Term))
					inst.samples[inst.open].end = o.at
					inst.open = -1
					drop[inst] = true
				}
				continue
			}
			if inst.open >= 0 {
				inst.samples[inst.open].end = o.at
				inst.open = -1
			}
			if o.finished {
				drop[inst] = true
			}
		}
		if len(drop) > 0 {
			live := c.live[:0]
			for _, inst := range c.live {
				if !drop[inst] {
					live = append(live, inst)
				}
			}
			c.live = live
		}
		c.leaders, c.leader = leaders, leader
		c.mu.Unlock()
	}
}

// currentLeader returns the elector the last sample round saw leading, if
// exactly one did.
func (c *chaos) currentLeader() *instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leaders == 1 {
		return c.leader
	}
	return nil
}

func (c *chaos) leaderCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaders
}

// stop stops inst in the background: gracefully, or as a crash (the
// proxy already cut everything; Stop's context is already done, so the
// release never reaches the store and the belief ends at once).
func (c *chaos) stop(inst *instance, crash bool) {
	inst.stopAt = c.now()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var err error
		if crash {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = inst.e.Stop(ctx)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = inst.e.Stop(ctx)
			cancel()
		}
		close(inst.quit)
		<-inst.writerDone
		_ = inst.proxy.Close()
		inst.closeClient()
		c.mu.Lock()
		inst.finished = true
		if err != nil {
			c.stopErrors++
			if len(c.stopErrSamples) < 5 {
				c.stopErrSamples = append(c.stopErrSamples, fmt.Sprintf("%s at %v: %v", inst.identity, inst.stopAt.Round(time.Millisecond), err))
			}
		}
		c.mu.Unlock()
		close(inst.stopped)
	}()
}

// restartLater starts a new elector in s once its previous one stopped,
// no earlier than at.
func (c *chaos) restartLater(s *slot, at time.Duration, newIdentity bool) {
	var try func()
	try = func() {
		if s.prev != nil {
			select {
			case <-s.prev.stopped:
			default:
				c.schedule(c.now()+20*time.Millisecond, try)
				return
			}
		}
		if c.aborted {
			return
		}
		s.prev = nil
		if newIdentity {
			s.gen++
		}
		if err := c.start(s); err != nil {
			c.violate("restart %s: %v", s.identity(), err)
			c.aborted = true
		}
	}
	c.schedule(at, try)
}

func (c *chaos) run() {
	c.t0 = time.Now()
	done, exited := make(chan struct{}), make(chan struct{})
	go c.sample(done, exited)
	for i := range c.o.Candidates {
		s := &slot{idx: i}
		c.slots = append(c.slots, s)
		if err := c.start(s); err != nil {
			c.violate("start %s: %v", s.identity(), err)
			c.aborted = true
			break
		}
	}
	ran := c.runFaults(c.o.Duration, c.o.MeanGap, c.inject, c.serverBack)
	c.quiesce()
	for _, s := range c.slots {
		if s.inst != nil {
			c.stop(s.inst, false)
		}
	}
	for _, s := range c.slots {
		if s.inst != nil {
			<-s.inst.stopped
		}
		if s.prev != nil {
			<-s.prev.stopped
		}
	}
	c.cancel()
	c.wg.Wait()
	// Let the sampler see every elector stopped.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		n := len(c.live)
		c.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	<-exited
	c.o.Duration = ran
}

// running returns the slots with a running elector (no stop in progress).
func (c *chaos) running() []*slot {
	var out []*slot
	for _, s := range c.slots {
		if s.inst != nil {
			out = append(out, s)
		}
	}
	return out
}

// pick chooses a target among slots that pass ok: the current leader more
// often than not.
func (c *chaos) pick(ok func(*slot) bool) *slot {
	var cands []*slot
	var lead *slot
	leader := c.currentLeader()
	for _, s := range c.running() {
		if ok(s) {
			cands = append(cands, s)
			if s.inst == leader {
				lead = s
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	if lead != nil && c.rng.IntN(10) < 6 {
		return lead
	}
	return cands[c.rng.IntN(len(cands))]
}

var chaosWeights = []faultWeight{
	{faultPartitionShort, 4}, {faultPartitionMid, 3}, {faultPartitionLong, 2}, {faultLatency, 3},
	{faultRefuse, 1}, {faultReset, 2}, {faultCrash, 3}, {faultStop, 2}, {faultResign, 2},
	{faultServerKill, 1}, {faultOutage, 1},
}

// inject injects one fault drawn from the schedule.
func (c *chaos) inject() {
	kind := drawFault(c.rng, chaosWeights)
	tm := c.o.Timing
	now := c.now()
	free := func(s *slot) bool { return s.fault == "" && !c.outage }
	switch kind {
	case faultPartitionShort, faultPartitionMid, faultPartitionLong, faultLatency, faultRefuse:
		s := c.pick(free)
		if s == nil {
			return
		}
		lat, d := c.proxyFaultSpan(kind, tm, c.o.FailoverBound, c.o.Slack)
		startProxyFault(s.inst.proxy, kind, lat)
		c.proxyFault(s, kind, now, d)
	case faultReset:
		s := c.pick(free)
		if s == nil {
			return
		}
		s.inst.proxy.Sever()
		c.record(kind, s.inst, now, now+c.maxBackoff())
	case faultCrash:
		s := c.pick(func(*slot) bool { return true })
		if s == nil {
			return
		}
		inst := s.inst
		inst.proxy.Sever()
		inst.proxy.Partition()
		if c.currentLeader() == inst {
			c.crashes = append(c.crashes, mark{at: now, inst: inst})
		}
		c.record(kind, inst, now, now)
		c.stop(inst, true)
		s.inst, s.prev, s.fault = nil, inst, ""
		s.faultSeq++
		c.restartLater(s, now+c.between(0, tm.LeaseDuration), c.rng.IntN(2) == 0)
	case faultStop:
		s := c.pick(free)
		if s == nil {
			return
		}
		inst := s.inst
		if c.currentLeader() == inst {
			c.handovers = append(c.handovers, mark{at: now, inst: inst})
		}
		c.record(kind, inst, now, now)
		c.stop(inst, false)
		s.inst, s.prev = nil, inst
		s.faultSeq++
		c.restartLater(s, now+c.between(0, tm.LeaseDuration), false)
	case faultResign:
		s := c.pick(free)
		if s == nil {
			return
		}
		inst := s.inst
		if c.currentLeader() == inst {
			c.handovers = append(c.handovers, mark{at: now, inst: inst})
		}
		c.record(kind, inst, now, now+jitter(tm.RetryPeriod, 3))
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = inst.e.Resign(ctx)
		}()
	case faultServerKill:
		if c.o.Server == nil || c.serverDown || c.outage {
			return
		}
		if err := c.killServer(now, tm); err != nil {
			c.violate("kill server: %v", err)
			c.aborted = true
			return
		}
		c.count(kind)
		for _, s := range c.running() {
			c.faults = append(c.faults, faultRec{kind: kind, inst: s.inst, start: now, end: -1})
		}
	case faultOutage:
		if c.outage || c.serverDown {
			return
		}
		c.outage = true
		c.count(kind)
		d := c.outageSpan(tm, c.o.FailoverBound)
		c.outages = append(c.outages, window{start: now, end: now + d})
		for i := range c.faults {
			if c.faults[i].end < 0 && c.faults[i].kind != faultServerKill {
				c.faults[i].end = now // replaced by the outage
			}
		}
		for _, s := range c.slots {
			s.fault = faultOutage // cancels pending heals; Heal below ends it
			s.faultSeq++
		}
		for _, s := range c.running() {
			s.inst.proxy.Partition()
			c.faults = append(c.faults, faultRec{kind: kind, inst: s.inst, start: now, end: now + d})
		}
		c.schedule(now+d, func() {
			c.healAll()
			c.outages[len(c.outages)-1].end = c.now()
			c.converge = append(c.converge, c.now())
		})
	}
}

func (c *chaos) count(kind string) { c.faultCount[kind]++ }

func (c *chaos) record(kind string, inst *instance, start, end time.Duration) {
	c.count(kind)
	c.faults = append(c.faults, faultRec{kind: kind, inst: inst, start: start, end: end})
}

// proxyFault records a fault on s's proxy and heals it after d (unless
// something else healed or replaced it first).
func (c *chaos) proxyFault(s *slot, kind string, now, d time.Duration) {
	c.count(kind)
	s.fault = kind
	s.faultSeq++
	seq, inst := s.faultSeq, s.inst
	c.faults = append(c.faults, faultRec{kind: kind, inst: inst, start: now, end: -1})
	idx := len(c.faults) - 1
	c.schedule(now+d, func() {
		if s.faultSeq != seq || s.inst != inst {
			return
		}
		inst.proxy.Heal()
		s.fault = ""
		c.faults[idx].end = c.now()
	})
}

// healAll heals every proxy and clears every slot fault.
func (c *chaos) healAll() {
	now := c.now()
	for _, s := range c.slots {
		if s.inst != nil {
			s.inst.proxy.Heal()
		}
		s.fault = ""
		s.faultSeq++
	}
	for i := range c.faults {
		if c.faults[i].end < 0 && c.faults[i].kind != faultServerKill {
			c.faults[i].end = now
		}
	}
	c.outage = false
}

func (c *chaos) serverBack(err error) {
	if err != nil {
		c.violate("restart server: %v", err)
		c.aborted = true
		return
	}
	now := c.serverUp()
	for i := range c.faults {
		if c.faults[i].kind == faultServerKill && c.faults[i].end < 0 {
			c.faults[i].end = now
		}
	}
	c.converge = append(c.converge, now)
}

// quiesce stops the faults: it heals every proxy, brings the server back,
// restarts every stopped candidate, then waits for exactly one leader.
func (c *chaos) quiesce() {
	c.healAll()
	if err := c.bringServerBack(c.serverBack); err != nil {
		c.violate("%v", err)
		c.aborted = true
	}
	// Run pending restarts now; drop pending heals (already healed).
	c.pending = nil
	for _, s := range c.slots {
		if s.inst == nil && !c.aborted {
			if s.prev != nil {
				<-s.prev.stopped
				s.prev = nil
			}
			if err := c.start(s); err != nil {
				c.violate("restart %s: %v", s.identity(), err)
				c.aborted = true
			}
		}
	}
	if c.aborted {
		return
	}
	quiet := c.now()
	limit := c.o.ConvergenceBound + c.o.Slack
	deadline := time.Now().Add(limit + 10*time.Second)
	for c.leaderCount() != 1 {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	c.finalConv = c.now() - quiet
	if c.leaderCount() != 1 {
		c.violate("%d leaders %v after the faults stopped, want exactly 1 within %v + slack %v", c.leaderCount(), c.finalConv.Round(time.Millisecond), c.o.ConvergenceBound, c.o.Slack)
	} else if c.finalConv > limit {
		c.violate("exactly one leader only %v after the faults stopped, want within %v + slack %v", c.finalConv.Round(time.Millisecond), c.o.ConvergenceBound, c.o.Slack)
	}
	// Keep the converged cluster running a little: the leader must renew.
	time.Sleep(2 * c.o.Timing.RetryPeriod)
	if n := c.leaderCount(); n != 1 {
		c.violate("%d leaders %v after convergence, want 1", n, 2*c.o.Timing.RetryPeriod)
	}
}
