package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
)

// attachment turns one elector's events into series. Events arrive on the
// elector's goroutines, one at a time in practice; mu also orders them
// against Attach's snapshot and against detaching.
type attachment struct {
	c                           *collector
	e                           *fxelection.Elector
	election, identity, backend string
	refs                        int // guarded by c.mu

	mu       sync.Mutex
	remove   func() // from AddObserver
	detached bool
	live     bool // base series exist

	leader    string // leader_info's leader label while hasLeader
	hasLeader bool
	okStart   time.Time // start of the last successful acquire or renew
	minMargin time.Duration
	hasMargin bool

	// Children of the vectors, cached once live.
	isLeader, term, lastRenew, marginMin prometheus.Gauge
	gained, lost                         prometheus.Counter
	margin                               prometheus.Observer
	errs                                 map[string]prometheus.Counter
	ops                                  map[opResult]prometheus.Observer
	handOvers                            map[string]prometheus.Counter // by outcome
}

type opResult struct{ op, result string }

var _ fxelection.Observer = (*attachment)(nil)

func newAttachment(c *collector, e *fxelection.Elector) *attachment {
	return &attachment{c: c, e: e, election: labelValue(e.Status().Election), identity: labelValue(e.Status().Identity), backend: labelValue(e.Status().Backend), refs: 1}
}

// Observe implements fxelection.Observer. It never blocks on anything but
// a short mutex and does no I/O.
func (a *attachment) Observe(ev fxelection.Event) {
	if ev.Kind == fxelection.EventDetached {
		a.c.detach(a)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.detached {
		return
	}
	a.ensure()
	switch ev.Kind {
	case fxelection.EventStartedLeading:
		a.isLeader.Set(1)
		a.gauge(&a.term, a.c.term).Set(float64(ev.Lease.Term))
		a.gained.Inc()
		a.gauge(&a.lastRenew, a.c.lastRenew).Set(unixSeconds(a.renewStart(ev.Time)))
	case fxelection.EventStoppedLeading:
		a.isLeader.Set(0)
		a.lost.Inc()
		// The elector forgets the leader when it steps down (Status.LeaderKnown
		// is false until the store is asked again); so do we.
		a.setLeader("", false)
	case fxelection.EventNewLeader:
		a.gauge(&a.term, a.c.term).Set(float64(ev.Lease.Term))
		a.setLeader(ev.Lease.Holder, true)
	case fxelection.EventOperation:
		op, res := opLabel(ev.Op), resultLabel(ev.Err)
		a.op(op, res).Observe(ev.Duration.Seconds())
		if res == ResultError {
			a.errCounter(op).Inc()
		}
		if res == ResultOK && (ev.Op == backendkit.OpAcquire || ev.Op == backendkit.OpRenew) {
			a.okStart = ev.Time.Add(-ev.Duration)
		}
	case handover.Event:
		a.handOvers[outcomeLabel(ev.Err)].Inc()
	case fxelection.EventRenewed:
		a.isLeader.Set(1)
		a.gauge(&a.term, a.c.term).Set(float64(ev.Lease.Term))
		a.gauge(&a.lastRenew, a.c.lastRenew).Set(unixSeconds(a.renewStart(ev.Time)))
		if a.margin == nil {
			a.margin = a.c.margin.WithLabelValues(a.election, a.identity)
		}
		a.margin.Observe(ev.Margin.Seconds())
		if !a.hasMargin || ev.Margin < a.minMargin {
			a.minMargin, a.hasMargin = ev.Margin, true
			a.gauge(&a.marginMin, a.c.marginMin).Set(ev.Margin.Seconds())
		}
	}
}

// renewStart is the start of the acquisition or renewal that just
// succeeded, as reported by its operation event; at, if that was missed.
func (a *attachment) renewStart(at time.Time) time.Time {
	if a.okStart.IsZero() || a.okStart.After(at) {
		return at
	}
	return a.okStart
}

// ensure creates the series every attached elector has: is_leader 0 and
// zeroed transition, error and hand-over counters. Gauges without a
// meaningful value yet (term, last_renew, margin) appear when first set.
// Called with a.mu held.
func (a *attachment) ensure() {
	if a.live {
		return
	}
	a.live = true
	c, el, id := a.c, a.election, a.identity
	a.isLeader = c.isLeader.WithLabelValues(el, id)
	a.isLeader.Set(0)
	a.gained = c.transitions.WithLabelValues(el, id, DirectionGained)
	a.lost = c.transitions.WithLabelValues(el, id, DirectionLost)
	a.errs = map[string]prometheus.Counter{}
	a.ops = map[opResult]prometheus.Observer{}
	for _, op := range []string{backendkit.OpAcquire, backendkit.OpRenew, backendkit.OpRelease, backendkit.OpGet} {
		a.errCounter(op)
	}
	// Hand-overs are rare: a counter that appeared only with its first
	// increment would hide that increment from increase() and rate().
	a.handOvers = make(map[string]prometheus.Counter, len(outcomes))
	for _, o := range outcomes {
		a.handOvers[o] = c.handOvers.WithLabelValues(el, id, o)
	}
}

// gauge returns the cached child of v for this elector, creating it.
func (a *attachment) gauge(cache *prometheus.Gauge, v *prometheus.GaugeVec) prometheus.Gauge {
	if *cache == nil {
		*cache = v.WithLabelValues(a.election, a.identity)
	}
	return *cache
}

func (a *attachment) op(op, res string) prometheus.Observer {
	k := opResult{op, res}
	o := a.ops[k]
	if o == nil {
		o = a.c.opDuration.WithLabelValues(a.election, a.identity, a.backend, op, res)
		a.ops[k] = o
	}
	return o
}

func (a *attachment) errCounter(op string) prometheus.Counter {
	c := a.errs[op]
	if c == nil {
		c = a.c.errors.WithLabelValues(a.election, a.identity, a.backend, op)
		a.errs[op] = c
	}
	return c
}

// setLeader replaces the leader_info series. leader comes from the store
// (through the elector), so it is made safe as a label value first. Called
// with a.mu held.
func (a *attachment) setLeader(leader string, known bool) {
	leader = labelValue(leader)
	if a.hasLeader && (!known || leader != a.leader) {
		a.c.leaderInfo.DeleteLabelValues(a.election, a.identity, a.leader)
	}
	if known {
		a.c.leaderInfo.WithLabelValues(a.election, a.identity, leader).Set(1)
	}
	a.leader, a.hasLeader = leader, known
}

// applyStatus sets the gauges from a snapshot of a running elector.
// Called with a.mu held.
func (a *attachment) applyStatus(s fxelection.Status) {
	a.ensure()
	if s.Leading {
		a.isLeader.Set(1)
		a.gauge(&a.term, a.c.term).Set(float64(s.Lease.Term))
		if !s.LastRenew.IsZero() {
			a.gauge(&a.lastRenew, a.c.lastRenew).Set(unixSeconds(s.LastRenew))
		}
	} else {
		a.isLeader.Set(0)
	}
	if s.LeaderKnown {
		a.gauge(&a.term, a.c.term).Set(float64(s.Leader.Term))
		a.setLeader(s.Leader.Holder, true)
	}
}

// opLabel bounds the operation label to the elector's operations.
func opLabel(op string) string {
	switch op {
	case backendkit.OpAcquire, backendkit.OpRenew, backendkit.OpRelease, backendkit.OpGet, handover.OpHandOver, handover.OpPreempt:
		return op
	}
	return "other"
}

// outcomes are the values of the outcome label of NameHandOvers.
var outcomes = []string{OutcomeHanded, OutcomeOvertaken, OutcomeLost, OutcomeError}

// outcomeLabel classifies a hand-over's outcome (handover.Event's
// Err). Anything but nil, ErrLeaseHeld and ErrLeaseLost is an error: a
// store failure, or a hand-over cut short by its context or by Stop.
func outcomeLabel(err error) string {
	switch {
	case err == nil:
		return OutcomeHanded
	case errors.Is(err, backendkit.ErrLeaseHeld):
		return OutcomeOvertaken
	case errors.Is(err, backendkit.ErrLeaseLost):
		return OutcomeLost
	}
	return OutcomeError
}

// resultLabel classifies an operation's outcome.
func resultLabel(err error) string {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, backendkit.ErrLeaseHeld):
		return ResultHeld
	case errors.Is(err, backendkit.ErrLeaseLost):
		return ResultLost
	case errors.Is(err, backendkit.ErrNoLease):
		return ResultNone
	case errors.Is(err, context.Canceled):
		return ResultCanceled
	}
	return ResultError
}

// unixSeconds is t as fractional seconds since the Unix epoch.
func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}
