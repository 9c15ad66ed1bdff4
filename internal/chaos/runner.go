package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// The schedule both workloads share: the weighted draw of a fault kind,
// the spans of proxy faults, the queue of due actions, the server's kill
// and restart, the slots whose members the faults hit, and the window a
// store that loses its leases on a restart documents.

// Fault kinds, as counted in Report.Faults.
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

type window struct{ start, end time.Duration }

type action struct {
	at time.Duration
	do func()
}

// faultWeight is how often a fault kind is drawn, relative to the others.
type faultWeight struct {
	kind   string
	weight int
}

// drawFault draws a fault kind from weights.
func drawFault(rng *rand.Rand, weights []faultWeight) string {
	total := 0
	for _, w := range weights {
		total += w.weight
	}
	n := rng.IntN(total)
	for _, w := range weights {
		if n < w.weight {
			return w.kind
		}
		n -= w.weight
	}
	return ""
}

// startProxyFault starts a proxy fault of kind on p: a partition, added
// latency, or refused connections (the current ones reset).
func startProxyFault(p Proxy, kind string, latency time.Duration) {
	switch kind {
	case faultPartitionShort, faultPartitionMid, faultPartitionLong:
		p.Partition()
	case faultLatency:
		p.SetLatency(latency)
	case faultRefuse:
		p.Refuse()
		p.Sever()
	}
}

// faultSched is a chaos run's clock, seeded random source, queue of due
// actions and the state of its server. Only the scheduler goroutine uses
// it.
type faultSched struct {
	rng         *rand.Rand
	t0          time.Time
	pending     []action
	server      Server
	serverDown  bool
	serverCh    chan error
	restarting  bool
	downWindows []window // server killed → back
	aborted     bool
	async       *sync.WaitGroup // the run's background work (server restarts)
}

func newFaultSched(seed uint64, server Server, async *sync.WaitGroup) faultSched {
	return faultSched{
		rng:      rand.New(rand.NewPCG(seed, 0xc4a05)),
		server:   server,
		serverCh: make(chan error, 1),
		async:    async,
	}
}

func (s *faultSched) now() time.Duration { return time.Since(s.t0) }

// between returns a uniform duration in [lo, hi).
func (s *faultSched) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// proxyFaultSpan draws how long a proxy fault of kind lasts and, for
// latency, how much it adds: partitions shorter than RenewDeadline,
// between RenewDeadline and LeaseDuration, and longer than failoverBound +
// slack; latency of 10–100 % of RetryPeriod for 1–4 retry periods; refused
// connections for ⅓…1½ leases.
func (s *faultSched) proxyFaultSpan(kind string, tm Timing, failoverBound, slack time.Duration) (latency, d time.Duration) {
	switch kind {
	case faultPartitionShort:
		d = s.between(tm.RenewDeadline/5, tm.RenewDeadline*4/5)
	case faultPartitionMid:
		d = s.between(tm.RenewDeadline, tm.LeaseDuration)
	case faultPartitionLong:
		d = s.between(failoverBound+slack, failoverBound+slack+tm.LeaseDuration)
	case faultLatency:
		latency = s.between(tm.RetryPeriod/10, tm.RetryPeriod)
		d = s.between(tm.RetryPeriod, 4*tm.RetryPeriod)
	case faultRefuse:
		d = s.between(tm.LeaseDuration/3, tm.LeaseDuration*3/2)
	}
	return latency, d
}

// outageSpan draws how long a whole-cluster outage lasts.
func (s *faultSched) outageSpan(tm Timing, failoverBound time.Duration) time.Duration {
	return s.between(tm.RenewDeadline, failoverBound+tm.LeaseDuration)
}

// schedule runs do at the given offset from t0 on the scheduler goroutine.
func (s *faultSched) schedule(at time.Duration, do func()) {
	s.pending = append(s.pending, action{at: at, do: do})
}

// runFaults calls inject every 0 to 2 × meanGap for duration, running the
// due actions in between and handing a server restart's result to back.
// It returns how long it ran.
func (s *faultSched) runFaults(duration, meanGap time.Duration, inject func(), back func(error)) time.Duration {
	end := s.now() + duration
	next := s.now() + s.between(0, 2*meanGap)
	for !s.aborted && s.now() < end {
		s.step(next, end, back)
		if s.now() >= next && s.now() < end {
			inject()
			next = s.now() + s.between(0, 2*meanGap)
		}
	}
	return s.now()
}

// step sleeps until the next fault, the next due action or a server
// restart result, and runs what is due.
func (s *faultSched) step(next, end time.Duration, back func(error)) {
	wake := min(next, end)
	for _, a := range s.pending {
		wake = min(wake, a.at)
	}
	if d := wake - s.now(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case err := <-s.serverCh:
			back(err)
		}
		t.Stop()
	}
	select {
	case err := <-s.serverCh:
		back(err)
	default:
	}
	now := s.now()
	due := s.pending[:0:0]
	keep := s.pending[:0]
	for _, a := range s.pending {
		if a.at <= now {
			due = append(due, a)
		} else {
			keep = append(keep, a)
		}
	}
	s.pending = keep
	for _, a := range due {
		a.do()
	}
}

// killServer kills the server with SIGKILL and schedules its restart
// after ¼…1½ leases.
func (s *faultSched) killServer(now time.Duration, tm Timing) error {
	if err := s.server.Kill(); err != nil {
		return err
	}
	s.serverDown = true
	s.downWindows = append(s.downWindows, window{start: now, end: -1})
	s.schedule(now+s.between(tm.LeaseDuration/4, tm.LeaseDuration*3/2), s.restartServer)
	return nil
}

// restartServer restarts the server in the background (retried once); the
// result arrives on serverCh.
func (s *faultSched) restartServer() {
	if s.restarting {
		return
	}
	s.restarting = true
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		err := s.server.Restart()
		if err != nil {
			time.Sleep(time.Second)
			err = s.server.Restart()
		}
		s.serverCh <- err
	}()
}

// serverUp records that the server is back and returns when.
func (s *faultSched) serverUp() time.Duration {
	now := s.now()
	s.serverDown, s.restarting = false, false
	s.downWindows[len(s.downWindows)-1].end = now
	return now
}

// errServerRestartHung is bringServerBack's error when a restart does not
// finish.
var errServerRestartHung = errors.New("server restart did not finish within 2 minutes")

// bringServerBack restarts a killed server now and hands the result to
// back.
func (s *faultSched) bringServerBack(back func(error)) error {
	if !s.serverDown {
		return nil
	}
	s.restartServer()
	select {
	case err := <-s.serverCh:
		back(err)
		return nil
	case <-time.After(2 * time.Minute):
		return errServerRestartHung
	}
}

// inRestartWindow reports whether [lo, hi] lies in the window a store that
// loses its leases on a restart documents: from a kill of the server until
// grace (RenewDeadline + slack: the last believer's next renewal fails)
// after it is back.
func inRestartWindow(downWindows []window, grace, lo, hi time.Duration) bool {
	for _, w := range downWindows {
		if w.end >= 0 && lo >= w.start && hi <= w.end+grace {
			return true
		}
	}
	return false
}

// memberBase is what the runner knows of a member (an elector, or a lock
// client): its identity, proxy and client, and when it started and
// stopped.
type memberBase struct {
	id          int
	identity    string
	proxy       Proxy
	closeClient func()
	started     time.Duration
	stopAt      time.Duration // when a stop or crash began; 0 while running
	stopped     chan struct{} // closed once stopped and closed
}

func (b *memberBase) base() *memberBase { return b }

// member is a workload's member type.
type member interface {
	comparable
	base() *memberBase
}

// workload is what the runner drives: electors or lock clients.
type workload[M member] interface {
	// start starts a member on its own backend (behind b.proxy).
	start(s *slot[M], b memberBase, backend fxelection.Backend) (M, error)
	// stop stops m in the background, gracefully or as a crash (its
	// proxy already cut), and closes m.stopped when done.
	stop(m M, crash bool)
	// favour picks, six times in ten, a favoured target among cands (the
	// leader, a lock holder), or returns nil.
	favour(cands []*slot[M]) *slot[M]
	// takenDown notes that m, about to stop or crash (kind), was taken down.
	takenDown(kind string, m M, now time.Duration)
	// resign has m resign (the election workload's fault).
	resign(m M, now time.Duration)
	// sampling starts and ends the workload's own observation of the run.
	sampling(on bool)
	// settle waits, once the faults stopped, for what the workload
	// promises then (one leader, every key taken by every client).
	settle()
}

// slot is one member position: at most one running member at a time.
type slot[M member] struct {
	idx      int
	gen      int // identity generation
	inst     M   // the running member; zero if none
	prev     M   // stopping, before a restart
	fault    string
	faultSeq int
}

type faultRec[M member] struct {
	kind       string
	inst       M
	start, end time.Duration // end -1: until healed, the server came back, or (a crash) ever
}

type mark[M member] struct {
	at   time.Duration
	inst M
}

// runner is one chaos run of a workload. The scheduler goroutine (run)
// owns slots, pending and the fault log; mu guards what the workload's
// goroutines record.
type runner[M member] struct {
	faultSched // clock, random source, due actions, the server

	t       *testing.T
	o       Options
	w       workload[M]
	weights []faultWeight
	prefix  string          // of identities
	ctx     context.Context // ends when the run ends (late writers stop)
	cancel  context.CancelFunc
	wg      sync.WaitGroup // async stops, resigns, late writers, server restarts

	// scheduler state
	slots      []*slot[M]
	faults     []faultRec[M]
	faultCount map[string]int
	outage     bool
	outages    []window
	converge   []time.Duration // outages healed, the server back
	nextID     int
	calm       atomic.Bool // the faults stopped

	mu         sync.Mutex
	violations []string

	trace *tracer // FXELECTION_CHAOS_TRACE
}

func newRunner[M member](t *testing.T, o Options, w workload[M], prefix string, weights []faultWeight) *runner[M] {
	r := &runner[M]{t: t, o: o, w: w, prefix: prefix, weights: weights, faultCount: map[string]int{}, trace: newTracer()}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.faultSched = newFaultSched(o.Seed, o.Server, &r.wg)
	return r
}

func (r *runner[M]) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
	r.trace.add(r.now(), "check", "violation: "+format, args...)
}

func (r *runner[M]) identity(s *slot[M]) string {
	return fmt.Sprintf("%s-%d.%d", r.prefix, s.idx, s.gen)
}

func (r *runner[M]) maxBackoff() time.Duration { return 3 * r.o.Timing.RetryPeriod }

func isSet[M member](m M) bool {
	var zero M
	return m != zero
}

// start starts a member in s with a new client behind a new proxy.
func (r *runner[M]) start(s *slot[M]) error {
	p, err := r.o.NewProxy(r.o.Target)
	if err != nil {
		return err
	}
	if r.outage {
		p.Partition()
	}
	b, closeClient, err := r.o.NewClient(p.Addr())
	if err != nil {
		_ = p.Close()
		return fmt.Errorf("new client: %w", err)
	}
	r.nextID++
	m, err := r.w.start(s, memberBase{id: r.nextID, identity: r.identity(s), proxy: p, closeClient: closeClient, stopped: make(chan struct{})}, b)
	if err != nil {
		return err
	}
	s.inst = m
	return nil
}

// restartLater starts a new member in s once its previous one stopped,
// no earlier than at.
func (r *runner[M]) restartLater(s *slot[M], at time.Duration, newIdentity bool) {
	var try func()
	try = func() {
		if isSet(s.prev) {
			select {
			case <-s.prev.base().stopped:
			default:
				r.schedule(r.now()+20*time.Millisecond, try)
				return
			}
		}
		if r.aborted {
			return
		}
		var zero M
		s.prev = zero
		if newIdentity {
			s.gen++
		}
		if err := r.start(s); err != nil {
			r.violate("restart %s: %v", r.identity(s), err)
			r.aborted = true
		}
	}
	r.schedule(at, try)
}

func (r *runner[M]) run() {
	r.t0 = time.Now()
	r.w.sampling(true)
	for i := range r.o.Candidates {
		s := &slot[M]{idx: i}
		r.slots = append(r.slots, s)
		if err := r.start(s); err != nil {
			r.violate("start %s: %v", r.identity(s), err)
			r.aborted = true
			break
		}
	}
	ran := r.runFaults(r.o.Duration, r.o.MeanGap, r.inject, r.serverBack)
	r.quiesce()
	for _, s := range r.slots {
		if isSet(s.inst) {
			r.w.stop(s.inst, false)
		}
	}
	for _, s := range r.slots {
		if isSet(s.inst) {
			<-s.inst.base().stopped
		}
		if isSet(s.prev) {
			<-s.prev.base().stopped
		}
	}
	r.cancel()
	r.wg.Wait()
	r.w.sampling(false)
	r.o.Duration = ran
}

// pick chooses a target among running members that pass ok: a favoured
// one (the leader, a holder) more often than not.
func (r *runner[M]) pick(ok func(*slot[M]) bool) *slot[M] {
	var cands []*slot[M]
	for _, s := range r.slots {
		if isSet(s.inst) && ok(s) {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	if s := r.w.favour(cands); s != nil {
		return s
	}
	return cands[r.rng.IntN(len(cands))]
}

// inject injects one fault drawn from the schedule.
func (r *runner[M]) inject() {
	kind := drawFault(r.rng, r.weights)
	tm := r.o.Timing
	now := r.now()
	free := func(s *slot[M]) bool { return s.fault == "" && !r.outage }
	switch kind {
	case faultPartitionShort, faultPartitionMid, faultPartitionLong, faultLatency, faultRefuse:
		s := r.pick(free)
		if s == nil {
			return
		}
		lat, d := r.proxyFaultSpan(kind, tm, r.o.FailoverBound, r.o.Slack)
		startProxyFault(s.inst.base().proxy, kind, lat)
		r.proxyFault(s, kind, now, d)
	case faultReset:
		s := r.pick(free)
		if s == nil {
			return
		}
		s.inst.base().proxy.Sever()
		end := now
		if !r.o.Locks {
			end += r.maxBackoff()
		}
		r.record(kind, s.inst, now, end)
	case faultCrash, faultStop:
		crash, ok := kind == faultCrash, free
		if crash {
			ok = func(*slot[M]) bool { return true } // a crash may hit a faulted member
		}
		s := r.pick(ok)
		if s == nil {
			return
		}
		inst := s.inst
		end := now
		if crash {
			inst.base().proxy.Sever()
			inst.base().proxy.Partition()
			end = -1
		}
		r.w.takenDown(kind, inst, now)
		r.record(kind, inst, now, end)
		r.w.stop(inst, crash)
		var zero M
		s.inst, s.prev = zero, inst
		if crash {
			s.fault = ""
		}
		s.faultSeq++
		r.restartLater(s, now+r.between(0, tm.LeaseDuration), crash && r.rng.IntN(2) == 0)
	case faultResign:
		if s := r.pick(free); s != nil {
			r.w.resign(s.inst, now)
		}
	case faultServerKill:
		if r.server == nil || r.serverDown || r.outage {
			return
		}
		if err := r.killServer(now, tm); err != nil {
			r.violate("kill server: %v", err)
			r.aborted = true
			return
		}
		r.faultCount[kind]++
		for _, s := range r.slots {
			if isSet(s.inst) {
				r.faults = append(r.faults, faultRec[M]{kind: kind, inst: s.inst, start: now, end: -1})
			}
		}
	case faultOutage:
		if r.outage || r.serverDown {
			return
		}
		r.outage = true
		r.faultCount[kind]++
		d := r.outageSpan(tm, r.o.FailoverBound)
		r.outages = append(r.outages, window{start: now, end: now + d})
		r.endFaults(now) // replaced by the outage
		for _, s := range r.slots {
			s.fault = faultOutage // cancels pending heals; healAll ends it
			s.faultSeq++
			if isSet(s.inst) {
				s.inst.base().proxy.Partition()
				r.faults = append(r.faults, faultRec[M]{kind: kind, inst: s.inst, start: now, end: now + d})
			}
		}
		r.schedule(now+d, func() {
			r.healAll()
			r.outages[len(r.outages)-1].end = r.now()
			r.converge = append(r.converge, r.now())
		})
	}
}

func (r *runner[M]) record(kind string, inst M, start, end time.Duration) {
	r.faultCount[kind]++
	if r.trace.on() {
		who := "all"
		if isSet(inst) {
			who = inst.base().identity
		}
		r.trace.add(start, "faults", "%s on %s", kind, who)
	}
	r.faults = append(r.faults, faultRec[M]{kind: kind, inst: inst, start: start, end: end})
}

// proxyFault records a fault on s's proxy and heals it after d (unless
// something else healed or replaced it first).
func (r *runner[M]) proxyFault(s *slot[M], kind string, now, d time.Duration) {
	r.record(kind, s.inst, now, -1)
	s.fault = kind
	s.faultSeq++
	seq, inst, idx := s.faultSeq, s.inst, len(r.faults)-1
	r.schedule(now+d, func() {
		if s.faultSeq != seq || s.inst != inst {
			return
		}
		inst.base().proxy.Heal()
		s.fault = ""
		r.faults[idx].end = r.now()
		r.trace.add(r.now(), "faults", "%s on %s healed", kind, inst.base().identity)
	})
}

// endFaults ends the open proxy faults and outages at now.
func (r *runner[M]) endFaults(now time.Duration) {
	for i, f := range r.faults {
		if f.end < 0 && f.kind != faultServerKill && f.kind != faultCrash {
			r.faults[i].end = now
		}
	}
}

// healAll heals every proxy and clears every slot fault.
func (r *runner[M]) healAll() {
	for _, s := range r.slots {
		if isSet(s.inst) {
			s.inst.base().proxy.Heal()
		}
		s.fault = ""
		s.faultSeq++
	}
	r.endFaults(r.now())
	r.outage = false
	r.trace.add(r.now(), "faults", "all healed")
}

func (r *runner[M]) serverBack(err error) {
	if err != nil {
		r.violate("restart server: %v", err)
		r.aborted = true
		return
	}
	now := r.serverUp()
	for i := range r.faults {
		if r.faults[i].kind == faultServerKill && r.faults[i].end < 0 {
			r.faults[i].end = now
		}
	}
	r.converge = append(r.converge, now)
}

// quiesce stops the faults: it heals every proxy, brings the server back,
// restarts every stopped member, then lets the workload settle.
func (r *runner[M]) quiesce() {
	r.calm.Store(true)
	r.healAll()
	if err := r.bringServerBack(r.serverBack); err != nil {
		r.violate("%v", err)
		r.aborted = true
	}
	r.pending = nil // restarts run now; heals are done
	for _, s := range r.slots {
		if !isSet(s.inst) && !r.aborted {
			if isSet(s.prev) {
				<-s.prev.base().stopped
				var zero M
				s.prev = zero
			}
			if err := r.start(s); err != nil {
				r.violate("restart %s: %v", r.identity(s), err)
				r.aborted = true
			}
		}
	}
	if !r.aborted {
		r.w.settle()
	}
}

// report returns the report's common part: the options and the faults,
// with the violations the run recorded.
func (r *runner[M]) report() *Report {
	rep := &Report{
		Seed: r.o.Seed, Candidates: r.o.Candidates, Duration: r.o.Duration, Timing: r.o.Timing,
		Slack: r.o.Slack, Faults: r.faultCount,
	}
	for _, n := range r.faultCount {
		rep.TotalFaults += n
	}
	rep.Violations = append(rep.Violations, r.violations...)
	return rep
}

// documented reports whether [lo, hi] lies in the window a store that
// loses its leases on a restart (RestartLosesLeases) documents.
func (r *runner[M]) documented(lo, hi time.Duration) bool {
	return r.o.RestartLosesLeases && inRestartWindow(r.downWindows, r.o.Timing.RenewDeadline+r.o.Slack, lo, hi)
}

// late runs write, under mu, after a pause of up to two leases (unless
// the run ends first): a late write, as a paused process would make.
func (r *runner[M]) late(write func(at time.Duration)) {
	pause := time.Duration(rand.Int64N(int64(2 * r.o.Timing.LeaseDuration)))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.ctx.Done():
			return
		}
		at := r.now()
		r.mu.Lock()
		defer r.mu.Unlock()
		write(at)
	}()
}

// history lists the faults on inst (and the cluster) and the callbacks
// cbs in the 10 s before t.
func (r *runner[M]) history(inst M, t time.Duration, cbs []record) string {
	out := ""
	for _, f := range r.faults {
		if f.inst == inst && f.start <= t && f.start >= t-10*time.Second {
			end := "-"
			if f.end >= 0 {
				end = f.end.Round(time.Millisecond).String()
			}
			out += fmt.Sprintf("%s %v…%s; ", f.kind, f.start.Round(time.Millisecond), end)
		}
	}
	for _, cb := range cbs {
		if cb.at <= t && cb.at >= t-10*time.Second {
			out += fmt.Sprintf("%s(%d)@%v; ", cb.kind, cb.term, cb.at.Round(time.Millisecond))
		}
	}
	if out == "" {
		return "none"
	}
	return out
}
