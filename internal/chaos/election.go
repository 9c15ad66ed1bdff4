package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// chaos is one run of the election workload. mu (the runner's) guards what
// the sampler, callbacks, observers and writers record.
type chaos struct {
	*runner[*instance]

	election  string
	handovers []mark[*instance] // a leader stopped or resigned
	crashes   []mark[*instance] // a leader crashed
	finalConv time.Duration
	sampled   chan struct{} // closed to end the sampler
	exited    chan struct{} // closed when the sampler ended

	all            []*instance
	live           []*instance // sampled
	leaders        int         // believing in the last sample round
	leader         *instance   // one of them
	highest        uint64      // the fenced resource
	fenced         fenceCounts
	liveRejects    []reject
	stopErrors     int
	stopErrSamples []string
}

type fenceCounts struct{ accepted, liveRejected, staleRejected, staleAccepted int }

type reject struct {
	at            time.Duration
	inst          *instance
	term, highest uint64
}

// instance is one elector with its client and proxy.
type instance struct {
	memberBase
	e          *fxelection.Elector
	quit       chan struct{} // stops the writer
	writerDone chan struct{}

	// under mu
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

// chaosWeights is how often each fault is drawn.
var chaosWeights = []faultWeight{
	{faultPartitionShort, 4}, {faultPartitionMid, 3}, {faultPartitionLong, 2}, {faultLatency, 3},
	{faultRefuse, 1}, {faultReset, 2}, {faultCrash, 3}, {faultStop, 2}, {faultResign, 2},
	{faultServerKill, 1}, {faultOutage, 1},
}

func newChaos(t *testing.T, o Options) *chaos {
	c := &chaos{election: fmt.Sprintf("chaos-%d-%d", o.Seed%1_000_000, time.Now().UnixNano()%1_000_000)}
	c.runner = newRunner[*instance](t, o, c, "chaos", chaosWeights)
	return c
}

// start starts an elector in s on backend b.
func (c *chaos) start(s *slot[*instance], base memberBase, b fxelection.Backend) (*instance, error) {
	p, closeClient := base.proxy, base.closeClient
	inst := &instance{memberBase: base, open: -1, quit: make(chan struct{}), writerDone: make(chan struct{})}
	tm := c.o.Timing
	e, err := fxelection.New(fxelection.Config{
		Name:     c.election,
		Identity: inst.identity,
		Metadata: map[string]string{"slot": fmt.Sprint(s.idx)},
		Timing: fxelection.Timing{
			LeaseDuration: tm.LeaseDuration,
			RenewDeadline: tm.RenewDeadline,
			RetryPeriod:   tm.RetryPeriod,
			MaxBackoff:    c.maxBackoff(),
		},
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
		return nil, fmt.Errorf("new elector: %w", err)
	}
	inst.e = e
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if c.trace.on() {
			c.trace.add(ev.Time.Sub(c.t0), inst.identity, "%s op=%s term=%d holder=%s reason=%s dur=%v err=%v", ev.Kind, ev.Op, ev.Lease.Term, ev.Lease.Holder, ev.Reason, ev.Duration.Round(time.Microsecond), ev.Err)
		}
		switch ev.Kind {
		case fxelection.EventStartedLeading:
			c.note(inst, &inst.evs, "start", ev.Lease.Term)
		case fxelection.EventStoppedLeading:
			c.note(inst, &inst.evs, "stop", ev.Lease.Term)
		case fxelection.EventDetached:
			c.note(inst, &inst.evs, "detached", 0)
		case fxelection.EventOperation:
			var held *backendkit.HeldError
			if ev.Op == backendkit.OpAcquire && ev.Err != nil && !errors.As(ev.Err, &held) {
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
		return inst, fmt.Errorf("start elector: %w", err)
	}
	go c.writer(inst)
	return inst, nil
}

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
	c.late(func(time.Duration) {
		if term < c.highest {
			c.fenced.staleRejected++
		} else {
			c.highest = term
			c.fenced.staleAccepted++
		}
	})
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
		if c.trace.on() && (leaders != c.leaders || leader != c.leader) {
			who := "-"
			if leader != nil {
				who = leader.identity
			}
			c.trace.add(c.now(), "sampler", "%d leaders (one: %s)", leaders, who)
		}
		c.leaders, c.leader = leaders, leader
		c.mu.Unlock()
	}
}

// settled reports that exactly one elector leads and that its last
// successful acquire or renewal started at or after since.
func (c *chaos) settled(since time.Time) bool {
	leader := c.currentLeader()
	if leader == nil {
		return false
	}
	st := leader.e.Status()
	return st.Leading && !st.LastRenew.Before(since)
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
// favour returns the leader among cands six times in ten.
func (c *chaos) favour(cands []*slot[*instance]) *slot[*instance] {
	leader := c.currentLeader()
	for _, s := range cands {
		if s.inst == leader && leader != nil {
			if c.rng.IntN(10) < 6 {
				return s
			}
			return nil
		}
	}
	return nil
}

// takenDown marks a leader's crash (for the failover and early-takeover
// checks) or graceful stop (for the hand-over measure).
func (c *chaos) takenDown(kind string, inst *instance, now time.Duration) {
	if c.currentLeader() != inst {
		return
	}
	if kind == faultCrash {
		c.crashes = append(c.crashes, mark[*instance]{at: now, inst: inst})
	} else {
		c.handovers = append(c.handovers, mark[*instance]{at: now, inst: inst})
	}
}

// resign has inst resign in the background.
func (c *chaos) resign(inst *instance, now time.Duration) {
	if c.currentLeader() == inst {
		c.handovers = append(c.handovers, mark[*instance]{at: now, inst: inst})
	}
	c.record(faultResign, inst, now, now+jitter(c.o.Timing.RetryPeriod, 3))
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = inst.e.Resign(ctx)
	}()
}

// sampling starts the sampler, or waits until it saw every elector
// stopped and ends it.
func (c *chaos) sampling(on bool) {
	if on {
		c.sampled, c.exited = make(chan struct{}), make(chan struct{})
		go c.sample(c.sampled, c.exited)
		return
	}
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
	close(c.sampled)
	<-c.exited
}

// settle waits, once the faults stopped, for exactly one leader whose
// belief rests on the store after the faults: its last successful acquire
// or renewal started after they stopped. A leader still believing on a
// renewal from before (its renew deadline not yet passed) is not
// convergence: its client may still be reconnecting (go-zookeeper waits a
// second between rounds of its servers), and it steps down at its
// deadline if the next renewal does not come in time.
func (c *chaos) settle() {
	quiet := c.now()
	quietAt := c.t0.Add(quiet)
	limit := c.o.ConvergenceBound + c.o.Slack
	deadline := time.Now().Add(limit + 10*time.Second)
	for !c.settled(quietAt) {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	c.finalConv = c.now() - quiet
	c.trace.add(c.now(), "check", "converged (%d leaders) %v after the faults stopped", c.leaderCount(), c.finalConv)
	if !c.settled(quietAt) {
		c.violate("%d leaders (none renewed since the faults stopped, if 1) %v after the faults stopped, want exactly 1 within %v + slack %v", c.leaderCount(), c.finalConv.Round(time.Millisecond), c.o.ConvergenceBound, c.o.Slack)
	} else if c.finalConv > limit {
		c.violate("exactly one leader only %v after the faults stopped, want within %v + slack %v", c.finalConv.Round(time.Millisecond), c.o.ConvergenceBound, c.o.Slack)
	}
	// Keep the converged cluster running a little: the leader must renew.
	time.Sleep(2 * c.o.Timing.RetryPeriod)
	if n := c.leaderCount(); n != 1 {
		c.violate("%d leaders %v after convergence, want 1", n, 2*c.o.Timing.RetryPeriod)
	}
}
