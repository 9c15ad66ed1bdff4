// Package failover runs fxelection electors and fenced writers on a store
// while the store itself fails over or loses its data, and measures what
// the package docs promise about it: whether a term ever repeats or goes
// back, how long two electors of one election both believed they led, and
// whether the fencing guards refused every stale write.
//
// Run drives one fault class (Options.Inject: a Redis primary killed and
// its replica promoted, a PostgreSQL standby promoted, a Redis restarted
// empty, a NATS server killed) again and again. Every election has several
// candidates, each on a client of its own (as separate processes would
// be); every leader writes through a fencing guard in a loop, so writes
// are in flight when the fault strikes, and before about half the faults
// a leader resigns, so that an acquisition is in flight too. After each
// fault Run waits until every election has one leader that the store
// confirmed (it acquired or renewed since the fault) and whose guarded
// write since the fault was accepted, then lets the store recover
// (Options.Recover) and injects the next fault. So faults do not strike
// while a deposed leader of the last one still believes it leads
// (Options.BackToBack lifts that).
//
// A write is stale when its term is lower than that of a write the guard
// had already acknowledged as accepted before the stale one was sent: the
// one thing a guard promises to refuse. It is late when its term is lower
// than that of a leadership that had started before it was sent (its
// writer had been deposed, whether it knew yet or not) or of a write sent
// before it was answered. Run reports both; a refused write that is not
// late would be a guard refusing the current leader.
package failover

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
)

// Target is the address every client of a store dials: the current
// primary's. A fault moves it, as a Sentinel, a virtual IP or a DNS name
// moves clients to a promoted replica. It is safe for concurrent use.
type Target struct{ addr atomic.Pointer[string] }

// NewTarget returns a Target pointing at addr.
func NewTarget(addr string) *Target {
	t := &Target{}
	t.Set(addr)
	return t
}

// Set moves the clients to addr: new connections dial it.
func (t *Target) Set(addr string) { t.addr.Store(&addr) }

// Addr returns the address new connections dial.
func (t *Target) Addr() string { return *t.addr.Load() }

// Dial connects to the current address, ignoring the address it is given;
// it has the signature of net.Dialer.DialContext.
func (t *Target) Dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, t.Addr())
}

// Writer makes one guarded write with the fencing token in ctx (the
// leader context of RunIfLeader). It returns an error matching
// fence.ErrStaleTerm when the guard refused it.
type Writer func(ctx context.Context) error

// Candidate is what a store gives each candidate: its backend and guarded
// writer, on a client of its own.
type Candidate struct {
	Backend fxelection.Backend
	Write   Writer
}

// Options configure Run. NewCandidate and Inject are required.
type Options struct {
	// Class names the fault class and store in the report, for example
	// "redis replica promoted".
	Class string
	// Faults is how many faults to inject. Default: 3.
	Faults int
	// Elections and Candidates (per election). Default: 3 and 3.
	Elections, Candidates int
	// Timing of every elector. Default: electiontesting's fault timing
	// (2s lease, 1.3s renew deadline, 300ms retry).
	Timing fxelection.Timing
	// Seed of the fault schedule (delays, resignations). Default: 1.
	Seed uint64
	// NewCandidate returns a candidate on a client of its own; it registers
	// the client's clean-up with t.
	NewCandidate func(t testing.TB) Candidate
	// Inject injects one fault and moves the clients (Target.Set) if the
	// store's address changes; rng is the run's random source.
	Inject func(t testing.TB, rng *rand.Rand)
	// Recover, if set, runs after the electors settled after a fault: a
	// replica rejoins, say.
	Recover func(t testing.TB)
	// WriteEvery is the pause between a leader's guarded writes. Default:
	// 20ms.
	WriteEvery time.Duration
	// Probe, if set, counts acknowledged writes the faults lost.
	Probe *Probe
	// BackToBack settles an election on a leader with an accepted write
	// since the fault alone, without waiting for the store to confirm its
	// lease: the next fault may then strike while a deposed leader still
	// believes it leads (a second fault within the first one's window).
	BackToBack bool
	// SettleLimit bounds the wait after a fault for every election to have
	// one leader with an accepted write. Default: one minute (a bound on a
	// hang, not on speed).
	SettleLimit time.Duration
}

// Probe measures the store's durability apart from the election: a
// counter in the faulted store, incremented in a loop on a client of its
// own while the faults strike. After each fault Run reads it back; every
// increment acknowledged before the fault whose value is above what is
// read was lost.
type Probe struct {
	// Incr increments the counter and returns its new value (or any
	// number that grows with every write, such as a revision).
	Incr func(ctx context.Context) (int64, error)
	// Read returns the counter's value (the number of the last write).
	Read func(ctx context.Context) (int64, error)
}

// Report is what Run measured.
type Report struct {
	Class      string
	Faults     int
	Elections  int
	Candidates int
	Elapsed    time.Duration
	// Leaderships counts leadership intervals; TermChanges those that
	// started after a fault (one per election and fault at most counts
	// the election's first after the fault).
	Leaderships int
	// FaultsWithNewTerm counts faults after which at least one election
	// got a new term; FaultsWithOverlap those during which two electors
	// of one election believed they led at once.
	FaultsWithNewTerm int
	FaultsWithOverlap int
	// Overlaps are the windows in which two electors of one election both
	// believed they led, by their own events' times.
	Overlaps []time.Duration
	// TermRegressions counts leaderships whose term was not above every
	// earlier leadership's term of the election (a repeat or a step back).
	TermRegressions []string
	// Writes counts guarded writes by outcome.
	Accepted, Refused, Failed int
	// Late counts writes sent after a higher term's leadership had
	// started, or answered after a write with a higher term had been
	// sent; LateRefused, LateAccepted and LateFailed split them. Accepted
	// late writes reached the guard before any write with the new term
	// (it could not know of the new term yet).
	Late, LateRefused, LateAccepted, LateFailed int
	// StaleAccepted lists accepted writes whose term was below that of a
	// write accepted and acknowledged before they were sent. StaleAfterLoss
	// counts those of them with a fault between the sending of that newer
	// write and their own (the fault can have lost the newer term: the
	// window the guards' docs state); the others are listed in
	// StaleUnexplained and must not exist.
	StaleAccepted    []string
	StaleAfterLoss   int
	StaleUnexplained []string
	// LiveRefused counts writes refused though they were not late: a
	// guard refusing a current leader (must be 0).
	LiveRefused []string
	// ProbeAcked counts the probe's acknowledged increments; ProbeLost
	// those acknowledged before a fault and missing after it, in
	// FaultsLosingAcked faults.
	ProbeAcked, ProbeLost, FaultsLosingAcked int
}

// MaxOverlap returns the longest overlap, or 0.
func (r *Report) MaxOverlap() time.Duration {
	if len(r.Overlaps) == 0 {
		return 0
	}
	return slices.Max(r.Overlaps)
}

// String is the report in one paragraph.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d faults in %v (%.1f per minute), %d elections × %d candidates, %d leaderships; ",
		r.Class, r.Faults, r.Elapsed.Round(time.Millisecond), float64(r.Faults)/r.Elapsed.Minutes(),
		r.Elections, r.Candidates, r.Leaderships)
	fmt.Fprintf(&b, "faults that changed a term %d, faults with two believing leaders %d; ", r.FaultsWithNewTerm, r.FaultsWithOverlap)
	fmt.Fprintf(&b, "overlaps %s; term repeats or regressions %d; ", durations(r.Overlaps), len(r.TermRegressions))
	fmt.Fprintf(&b, "guarded writes accepted %d, refused %d, failed %d; late writes %d (refused %d, accepted before the guard saw the new term %d, failed %d); live writes refused %d; accepted stale writes %d (%d after a fault that could lose the newer term)",
		r.Accepted, r.Refused, r.Failed, r.Late, r.LateRefused, r.LateAccepted, r.LateFailed, len(r.LiveRefused), len(r.StaleAccepted), r.StaleAfterLoss)
	if r.ProbeAcked > 0 {
		fmt.Fprintf(&b, "; probe: %d acknowledged writes, %d lost in %d faults", r.ProbeAcked, r.ProbeLost, r.FaultsLosingAcked)
	}
	return b.String()
}

// durations summarises ds as n, p50, p99 and max.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond)
	}
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", len(s), q(0.5), q(0.99), s[len(s)-1].Round(time.Millisecond))
}

// interval is one leadership as its elector's events tell it.
type interval struct {
	identity   string
	term       uint64
	start, end time.Time // end zero while leading
}

// write is one guarded write.
type write struct {
	identity   string
	term       uint64
	sent, done time.Time
	outcome    outcome
}

type outcome int

const (
	accepted outcome = iota
	refused
	failed
)

// election is the record of one election: its leaderships and writes.
type election struct {
	name string

	mu        sync.Mutex
	intervals []interval
	writes    []write
	confirmed map[string]time.Time // identity → its last acquisition or renewal
}

// Observe implements fxelection.Observer.
func (e *election) Observe(ev fxelection.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Kind {
	case fxelection.EventRenewed:
		e.confirm(ev.Identity, ev.Time)
	case fxelection.EventStartedLeading:
		e.confirm(ev.Identity, ev.Time)
		e.intervals = append(e.intervals, interval{identity: ev.Identity, term: ev.Lease.Term, start: ev.Time})
	case fxelection.EventStoppedLeading:
		for i := len(e.intervals) - 1; i >= 0; i-- {
			if e.intervals[i].identity == ev.Identity && e.intervals[i].end.IsZero() {
				e.intervals[i].end = ev.Time
				break
			}
		}
	}
}

// confirm notes that the store confirmed identity's lease at t. The
// caller holds e.mu.
func (e *election) confirm(identity string, t time.Time) {
	if e.confirmed == nil {
		e.confirmed = map[string]time.Time{}
	}
	e.confirmed[identity] = t
}

// confirmedSince reports whether the store confirmed identity's lease (an
// acquisition or a renewal) at or after since.
func (e *election) confirmedSince(identity string, since time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.confirmed[identity].Before(since)
}

func (e *election) record(w write) {
	e.mu.Lock()
	e.writes = append(e.writes, w)
	e.mu.Unlock()
}

// acceptedSince reports whether identity made an accepted write sent at or
// after since.
func (e *election) acceptedSince(identity string, since time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.writes) - 1; i >= 0; i-- {
		w := e.writes[i]
		if w.sent.Before(since) {
			return false
		}
		if w.identity == identity && w.outcome == accepted {
			return true
		}
	}
	return false
}

// member is one running candidate.
type member struct {
	el       *fxelection.Elector
	identity string
	write    Writer
	record   *election
}

// progressEvery is how many faults pass between two interim reports.
const progressEvery = 100

// Run runs the fault class of opts and returns what it measured. It fails
// t when an election does not settle after a fault, and reports (without
// failing) everything else for the caller to check.
func Run(t *testing.T, opts Options) *Report {
	t.Helper()
	opts = withDefaults(opts)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6661696c))
	elections := make([]*election, opts.Elections)
	members := make([][]*member, opts.Elections)
	for i := range elections {
		elections[i] = &election{name: fmt.Sprintf("failover-%d-%d", time.Now().UnixNano()%1e6, i)}
		for j := range opts.Candidates {
			c := opts.NewCandidate(t)
			m := &member{identity: fmt.Sprintf("c%d", j), write: c.Write, record: elections[i]}
			m.el = startElector(t, c.Backend, elections[i], m.identity, opts.Timing)
			members[i] = append(members[i], m)
		}
	}

	// Every leader writes in a loop until the run ends.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, ms := range members {
		for _, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				writeLoop(ctx, m, opts.WriteEvery)
			}()
		}
	}

	probe := newProber(opts.Probe)
	if probe != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probe.loop(ctx)
		}()
	}

	settle := func(since time.Time, what string) {
		t.Helper()
		deadline := time.Now().Add(opts.SettleLimit)
		for i, ms := range members {
			for {
				if leader := soleLeader(ms); leader != nil && (opts.BackToBack || elections[i].confirmedSince(leader.identity, since)) && elections[i].acceptedSince(leader.identity, since) {
					break
				}
				if time.Now().After(deadline) {
					for _, m := range ms {
						s := m.el.Status()
						t.Logf("%s %s: leading=%v term=%d leader=%q last error: %v", elections[i].name, m.identity, s.Leading, s.Lease.Term, s.Leader.Holder, s.LastError)
					}
					t.Fatalf("%s: election %d has no single leader with an accepted guarded write %v after %s", opts.Class, i, opts.SettleLimit, what)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}

	start := time.Now()
	settle(start, "the start")
	faultTimes := make([]time.Time, 0, opts.Faults)
	for f := range opts.Faults {
		// Put an acquisition in flight before about half the faults, and
		// strike at a random point of the renewal period.
		if rng.IntN(2) == 0 {
			ms := members[rng.IntN(len(members))]
			if leader := soleLeader(ms); leader != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
					defer rcancel()
					_ = leader.el.Resign(rctx)
				}()
			}
		}
		time.Sleep(time.Duration(rng.Int64N(int64(opts.Timing.RetryPeriod))))
		at := time.Now()
		faultTimes = append(faultTimes, at)
		probe.newGeneration()
		opts.Inject(t, rng)
		settle(at, fmt.Sprintf("fault %d", f+1))
		probe.check(ctx, t, opts.SettleLimit)
		if opts.Recover != nil {
			opts.Recover(t)
		}
		if (f+1)%progressEvery == 0 && f+1 < opts.Faults {
			r := analyse(elections, faultTimes)
			r.Class, r.Faults, r.Elections, r.Candidates, r.Elapsed = opts.Class, f+1, opts.Elections, opts.Candidates, time.Since(start)
			t.Logf("so far: %v", r)
		}
	}
	elapsed := time.Since(start)
	// Let the writers run once more on the recovered store, then stop.
	time.Sleep(2 * opts.Timing.RetryPeriod)
	cancel()
	wg.Wait()
	for _, ms := range members {
		for _, m := range ms {
			sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
			_ = m.el.Stop(sctx)
			scancel()
		}
	}
	r := analyse(elections, faultTimes)
	if probe != nil {
		r.ProbeAcked, r.ProbeLost, r.FaultsLosingAcked = probe.acked, probe.lost, probe.faultsLosing
	}
	r.Class, r.Faults, r.Elections, r.Candidates, r.Elapsed = opts.Class, opts.Faults, opts.Elections, opts.Candidates, elapsed
	return r
}

func withDefaults(o Options) Options {
	if o.Faults == 0 {
		o.Faults = 3
	}
	if o.Elections == 0 {
		o.Elections = 3
	}
	if o.Candidates == 0 {
		o.Candidates = 3
	}
	if o.Timing == (fxelection.Timing{}) {
		o.Timing = fxelection.Timing{
			LeaseDuration: 2 * time.Second,
			RenewDeadline: 1300 * time.Millisecond,
			RetryPeriod:   300 * time.Millisecond,
			MaxBackoff:    1200 * time.Millisecond,
		}
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.WriteEvery == 0 {
		o.WriteEvery = 20 * time.Millisecond
	}
	if o.SettleLimit == 0 {
		o.SettleLimit = time.Minute
	}
	return o
}

// startElector starts a candidate of e as identity on b, its events
// recorded by e; it is stopped when the test ends (if Run has not).
func startElector(t *testing.T, b fxelection.Backend, e *election, identity string, timing fxelection.Timing) *fxelection.Elector {
	t.Helper()
	el, err := fxelection.New(fxelection.Config{Name: e.name, Identity: identity, Timing: timing}, b)
	if err != nil {
		t.Fatalf("new elector: %v", err)
	}
	el.AddObserver(e)
	if err := el.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = el.Stop(context.Background()) })
	return el
}

// soleLeader returns the one member of ms that believes it leads, or nil
// when none or several do.
func soleLeader(ms []*member) *member {
	var leader *member
	for _, m := range ms {
		if m.el.IsLeader() {
			if leader != nil {
				return nil
			}
			leader = m
		}
	}
	return leader
}

// writeLoop makes a guarded write every pause while m leads, until ctx
// ends, and records each.
func writeLoop(ctx context.Context, m *member, pause time.Duration) {
	tick := time.NewTicker(pause)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, _ = m.el.RunIfLeader(ctx, func(lctx context.Context) error {
			l, _ := fxelection.LeaseFromContext(lctx)
			wctx, cancel := context.WithTimeout(lctx, time.Second)
			defer cancel()
			w := write{identity: m.identity, term: l.Term, sent: time.Now()}
			err := m.write(wctx)
			w.done = time.Now()
			switch {
			case err == nil:
				w.outcome = accepted
			case errors.Is(err, fence.ErrStaleTerm):
				w.outcome = refused
			default:
				w.outcome = failed
			}
			m.record.record(w)
			return nil
		})
	}
}

// analyse computes the report from what the elections recorded.
func analyse(elections []*election, faults []time.Time) *Report {
	r := &Report{}
	newTerm := make([]bool, len(faults))
	overlapped := make([]bool, len(faults))
	faultOf := func(at time.Time) int { // the last fault at or before at, or -1
		return sort.Search(len(faults), func(i int) bool { return faults[i].After(at) }) - 1
	}
	for _, e := range elections {
		e.mu.Lock()
		ivs := slices.Clone(e.intervals)
		ws := slices.Clone(e.writes)
		e.mu.Unlock()
		now := time.Now()
		for i := range ivs {
			if ivs[i].end.IsZero() {
				ivs[i].end = now
			}
		}
		sort.SliceStable(ivs, func(i, j int) bool { return ivs[i].start.Before(ivs[j].start) })
		r.Leaderships += len(ivs)

		// Terms: each leadership above every earlier one.
		var highest uint64
		for _, iv := range ivs {
			if iv.term <= highest {
				r.TermRegressions = append(r.TermRegressions, fmt.Sprintf("%s: %s led term %d at %s after term %d",
					e.name, iv.identity, iv.term, iv.start.Format("15:04:05.000"), highest))
			}
			if iv.term > highest {
				if f := faultOf(iv.start); f >= 0 && highest != 0 {
					newTerm[f] = true
				}
				highest = iv.term
			}
		}
		// Overlaps: two identities believing at once.
		for i := range ivs {
			for j := i + 1; j < len(ivs); j++ {
				a, b := ivs[i], ivs[j]
				if a.identity == b.identity || !b.start.Before(a.end) {
					continue
				}
				end := a.end
				if b.end.Before(end) {
					end = b.end
				}
				r.Overlaps = append(r.Overlaps, end.Sub(b.start))
				if f := faultOf(b.start); f >= 0 {
					overlapped[f] = true
				}
			}
		}
		// Writes. startedMax[i] is the highest term of ivs[:i+1] (in start
		// order); ackedMax[i] the highest term of the accepted writes
		// acknowledged up to acked[i].
		startedMax := make([]uint64, len(ivs))
		for i, iv := range ivs {
			startedMax[i] = iv.term
			if i > 0 {
				startedMax[i] = max(startedMax[i], startedMax[i-1])
			}
		}
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].sent.Before(ws[j].sent) })
		sentMax := make([]uint64, len(ws))
		for i, w := range ws {
			sentMax[i] = w.term
			if i > 0 {
				sentMax[i] = max(sentMax[i], sentMax[i-1])
			}
		}
		var acked []write
		for _, w := range ws {
			if w.outcome == accepted {
				acked = append(acked, w)
			}
		}
		sort.SliceStable(acked, func(i, j int) bool { return acked[i].done.Before(acked[j].done) })
		ackedMax := make([]int, len(acked)) // index into acked of the highest term so far
		for i := range acked {
			ackedMax[i] = i
			if i > 0 && acked[ackedMax[i-1]].term >= acked[i].term {
				ackedMax[i] = ackedMax[i-1]
			}
		}
		for _, w := range ws {
			switch w.outcome {
			case accepted:
				r.Accepted++
			case refused:
				r.Refused++
			default:
				r.Failed++
			}
			// Leaderships that started before w was sent, writes sent
			// before it was answered.
			n := sort.Search(len(ivs), func(i int) bool { return !ivs[i].start.Before(w.sent) })
			k := sort.Search(len(ws), func(i int) bool { return !ws[i].sent.Before(w.done) })
			if (n > 0 && startedMax[n-1] > w.term) || (k > 0 && sentMax[k-1] > w.term) {
				r.Late++
				switch w.outcome {
				case accepted:
					r.LateAccepted++
				case refused:
					r.LateRefused++
				default:
					r.LateFailed++
				}
			} else if w.outcome == refused {
				r.LiveRefused = append(r.LiveRefused, fmt.Sprintf("%s: %s's write with term %d sent at %s, answered at %s",
					e.name, w.identity, w.term, w.sent.Format("15:04:05.000000"), w.done.Format("15:04:05.000000")))
			}
			if w.outcome != accepted {
				continue
			}
			// Accepted writes acknowledged before w was sent.
			n = sort.Search(len(acked), func(i int) bool { return !acked[i].done.Before(w.sent) })
			if n > 0 {
				if v := acked[ackedMax[n-1]]; v.term > w.term {
					msg := fmt.Sprintf("%s: %s's write with term %d sent at %s, after %s's write with term %d was accepted at %s",
						e.name, w.identity, w.term, w.sent.Format("15:04:05.000000"), v.identity, v.term, v.done.Format("15:04:05.000000"))
					r.StaleAccepted = append(r.StaleAccepted, msg)
					// The newer write may have been applied before the kill
					// and answered after the fault began: any fault after it
					// was sent can have lost it.
					if f := faultOf(w.sent); f >= 0 && faults[f].After(v.sent) {
						r.StaleAfterLoss++
					} else {
						r.StaleUnexplained = append(r.StaleUnexplained, msg)
					}
				}
			}
		}
	}
	for f := range faults {
		if newTerm[f] {
			r.FaultsWithNewTerm++
		}
		if overlapped[f] {
			r.FaultsWithOverlap++
		}
	}
	return r
}

// prober runs a Probe: it increments the counter in a loop and remembers
// each acknowledged value with the generation (faults injected so far)
// in which the increment was sent.
type prober struct {
	p   *Probe
	gen atomic.Int64

	mu                        sync.Mutex // held for each increment, and by check
	pending                   []probeAck
	acked, lost, faultsLosing int
}

type probeAck struct{ gen, value int64 }

func newProber(p *Probe) *prober {
	if p == nil {
		return nil
	}
	return &prober{p: p}
}

// loop increments the counter every millisecond or so until ctx ends.
func (p *prober) loop(ctx context.Context) {
	for ctx.Err() == nil {
		p.mu.Lock()
		g := p.gen.Load()
		ictx, cancel := context.WithTimeout(ctx, time.Second)
		v, err := p.p.Incr(ictx)
		cancel()
		if err == nil {
			p.pending = append(p.pending, probeAck{g, v})
			p.acked++
		}
		p.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the store is down
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// newGeneration marks the increments sent from now on as sent after the
// next fault.
func (p *prober) newGeneration() {
	if p != nil {
		p.gen.Add(1)
	}
}

// check reads the counter after a fault and counts the increments sent
// and acknowledged before the fault that it no longer holds.
func (p *prober) check(ctx context.Context, t testing.TB, limit time.Duration) {
	t.Helper()
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var v int64
	var err error
	deadline := time.Now().Add(limit)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		v, err = p.p.Read(rctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe: read after the fault: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cur, lost := p.gen.Load(), 0
	kept := p.pending[:0]
	for _, a := range p.pending {
		if a.gen < cur {
			if a.value > v {
				lost++
			}
			continue
		}
		kept = append(kept, a)
	}
	p.pending = kept
	p.lost += lost
	if lost > 0 {
		p.faultsLosing++
	}
}
