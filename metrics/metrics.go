// Package metrics exports Prometheus metrics for fxelection electors and
// serves health checks (liveness, readiness, leader-only) built on their
// Status. It plugs into electors through fxelection.Observer, so the core
// never imports Prometheus.
//
// Without fx:
//
//	m, err := metrics.New(prometheus.DefaultRegisterer)
//	if err != nil { … }
//	detach := m.Attach(elector) // before elector.Start, to see every event
//	defer detach()
//	mux.Handle("/livez", metrics.Liveness(elector))
//	mux.Handle("/readyz", metrics.Readiness(elector))
//
// With fx, add Module: it registers on the graph's prometheus.Registerer
// (or the default one), attaches to every elector in the fxelection value
// group and provides *Metrics and Handlers.
//
// # Series
//
// Every series carries the labels election and identity (the elector's
// Config.Name and Config.Identity), so several electors in one process,
// even for the same election, never share a series. Label values are
// bounded: one set per attached elector, plus the fixed operation, result,
// direction and outcome values. When an elector stops (or is detached)
// all of its series are deleted, so a stopped elector never leaves a
// stale is_leader 1 or leader_info behind. Default identities contain the pid
// and a random suffix and change on every restart, like a pod name; set
// Config.Identity to a stable name (the pod name) to limit series churn.
//
//	fxelection_is_leader                           gauge      election, identity
//	fxelection_term                                gauge      election, identity
//	fxelection_leadership_transitions_total        counter    election, identity, direction
//	fxelection_backend_operation_duration_seconds  histogram  election, identity, backend, operation, result
//	fxelection_backend_errors_total                counter    election, identity, backend, operation
//	fxelection_last_renew_timestamp_seconds        gauge      election, identity
//	fxelection_renew_margin_seconds                histogram  election, identity
//	fxelection_renew_margin_min_seconds            gauge      election, identity
//	fxelection_leader_info                         gauge      election, identity, leader
//	fxelection_healthy                             gauge      election, identity
//	fxelection_handovers_total                     counter    election, identity, outcome
//
// fxelection_handovers_total counts the hand-overs of Elector.ResignTo
// (and of preemption) by outcome: handed, overtaken, lost or error (see
// the Outcome constants); all four start at zero.
//
// # Pools
//
// RegisterPool exports one pool.Pool worker's state, read from its Status
// at each scrape, under the label pool:
//
//	fxelection_pool_owned_shards                   gauge      pool
//	fxelection_pool_target_shards                  gauge      pool
//	fxelection_pool_members                        gauge      pool
//	fxelection_pool_moves_total                    counter    pool
//	fxelection_pool_acquired_total                 counter    pool
//	fxelection_pool_lost_total                     counter    pool
//
// # Locks
//
// A LockMetrics (NewLockMetrics) is a lock.Observer: pass it as
// lock.Options.Observer to the Lockers of package lock, and it counts
// their acquisitions, waits, held locks and losses under the label lock
// (a lock's key or a semaphore's name; a lock and a semaphore of one name
// share it):
//
//	fxelection_lock_wait_seconds                   histogram  lock, outcome
//	fxelection_lock_acquisitions_total             counter    lock, outcome
//	fxelection_locks_held                          gauge      lock
//	fxelection_lock_lost_total                     counter    lock
//	fxelection_lock_held_seconds                   histogram  lock
//
// Lock keys may be unbounded (one per user); the lock label is not: the
// first LockMetricsOptions.MaxKeys values (default 100) get series of
// their own and keep them, later keys are counted under lock="_other".
//
// See each metric's help text, and metrics/README.md in the repository,
// for its meaning.
package metrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection"
)

// Metric names, as exported.
const (
	NameIsLeader          = "fxelection_is_leader"
	NameTerm              = "fxelection_term"
	NameTransitions       = "fxelection_leadership_transitions_total"
	NameOperationDuration = "fxelection_backend_operation_duration_seconds"
	NameBackendErrors     = "fxelection_backend_errors_total"
	NameLastRenew         = "fxelection_last_renew_timestamp_seconds"
	NameRenewMargin       = "fxelection_renew_margin_seconds"
	NameRenewMarginMin    = "fxelection_renew_margin_min_seconds"
	NameLeaderInfo        = "fxelection_leader_info"
	NameHealthy           = "fxelection_healthy"
	NameHandOvers         = "fxelection_handovers_total"
)

// Label values of the result label of NameOperationDuration.
const (
	// ResultOK: the operation succeeded.
	ResultOK = "ok"
	// ResultHeld: Acquire found the lease held by another candidate.
	ResultHeld = "held"
	// ResultLost: Renew found the lease no longer ours.
	ResultLost = "lost"
	// ResultNone: Get found no lease.
	ResultNone = "none"
	// ResultCanceled: the elector was stopping and cancelled the call.
	ResultCanceled = "canceled"
	// ResultError: a store failure; also counted in NameBackendErrors.
	ResultError = "error"
)

// Label values of the outcome label of NameHandOvers: how a hand-over
// (Elector.ResignTo, or a preemption) ended, as its
// handover.Event says.
const (
	// OutcomeHanded: the hint record naming the successor was written (or
	// the successor had taken the lease already).
	OutcomeHanded = "handed"
	// OutcomeOvertaken: another candidate took the lease between the
	// release and the hint's write (backendkit.ErrLeaseHeld).
	OutcomeOvertaken = "overtaken"
	// OutcomeLost: the lease was no longer this candidate's; nothing was
	// written (backendkit.ErrLeaseLost).
	OutcomeLost = "lost"
	// OutcomeError: a store failure, or the hand-over was cancelled.
	OutcomeError = "error"
)

// Label values of the direction label of NameTransitions.
const (
	DirectionGained = "gained"
	DirectionLost   = "lost"
)

// OperationBuckets are the buckets of NameOperationDuration, in seconds:
// from 100µs (loopback stores) to 10s (slow cloud stores, timeouts).
func OperationBuckets() []float64 {
	return []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
}

// MarginBuckets are the buckets of NameRenewMargin, in seconds. They are
// finest at the low end, where a margin means a leader came close to losing
// its lease.
func MarginBuckets() []float64 {
	return []float64{.01, .025, .05, .1, .25, .5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60}
}

// Metrics exports fxelection series on one prometheus.Registerer. Attach
// electors to it; it is safe for concurrent use.
//
// All Metrics created on the same Registerer share one set of collectors
// (New reuses what an earlier New registered), so two fx apps in one
// process, or New called twice, do not conflict: each attached elector
// owns its own series. The collectors stay registered for the life of the
// Registerer; detaching only deletes series.
type Metrics struct {
	c *collector
}

// collector holds every vector and the attachments feeding them. It is the
// one prometheus.Collector a Metrics registers.
type collector struct {
	isLeader    *prometheus.GaugeVec
	term        *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	opDuration  *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	lastRenew   *prometheus.GaugeVec
	margin      *prometheus.HistogramVec
	marginMin   *prometheus.GaugeVec
	leaderInfo  *prometheus.GaugeVec
	handOvers   *prometheus.CounterVec
	healthy     healthGauge

	mu       sync.Mutex
	attached map[*fxelection.Elector]*attachment
}

var _ prometheus.Collector = (*collector)(nil)

func newCollector() *collector {
	base := []string{"election", "identity"}
	with := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	c := &collector{
		isLeader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameIsLeader,
			Help: "Whether this candidate leads the election (1) or not (0).",
		}, base),
		term: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameTerm,
			Help: "Fencing term of the leader last observed by this candidate (its own while leading).",
		}, base),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameTransitions,
			Help: "Times this candidate gained or lost leadership, by direction.",
		}, with("direction")),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameOperationDuration,
			Help:    "Duration of backend operations, by operation and result (ok, held, lost, none, canceled, error).",
			Buckets: OperationBuckets(),
		}, with("backend", "operation", "result")),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameBackendErrors,
			Help: "Backend operations that failed with a store error, by operation.",
		}, with("backend", "operation")),
		lastRenew: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameLastRenew,
			Help: "Unix time at which the last successful acquisition or renewal of the lease started.",
		}, base),
		margin: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameRenewMargin,
			Help:    "Lease time left at each successful renewal: lease duration minus the time from the previous successful renewal's (or the acquisition's) start to this renewal's completion.",
			Buckets: MarginBuckets(),
		}, base),
		marginMin: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameRenewMarginMin,
			Help: "Smallest renew margin seen since metrics were attached to this elector.",
		}, base),
		leaderInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameLeaderInfo,
			Help: "Leader of the election as last observed by this candidate: one series with value 1, absent while unknown.",
		}, with("leader")),
		handOvers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameHandOvers,
			Help: "Hand-overs of the lease by this candidate (ResignTo, preemption), by outcome (handed, overtaken, lost, error).",
		}, with("outcome")),
		attached: map[*fxelection.Elector]*attachment{},
	}
	c.healthy = healthGauge{c: c, desc: prometheus.NewDesc(NameHealthy,
		"Whether this candidate passes its health check (1) or not (0): Status.Healthy, read at each scrape; always 1 without a Config.Health.Check.",
		base, nil)}
	return c
}

func (c *collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.isLeader, c.term, c.transitions, c.opDuration, c.errors,
		c.lastRenew, c.margin, c.marginMin, c.leaderInfo, c.handOvers, c.healthy}
}

// healthGauge is NameHealthy. Health changes are not events, so it is
// read from each attached elector's Status when scraped, for the
// electors whose series exist (see attachment.ensure); a stopped or
// detached elector has none.
type healthGauge struct {
	c    *collector
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (h healthGauge) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h healthGauge) Collect(ch chan<- prometheus.Metric) {
	h.c.mu.Lock()
	list := make([]*attachment, 0, len(h.c.attached))
	for _, a := range h.c.attached {
		list = append(list, a)
	}
	h.c.mu.Unlock()
	for _, a := range list {
		a.mu.Lock()
		live := a.live && !a.detached
		a.mu.Unlock()
		if !live {
			continue
		}
		v := 0.0
		if a.e.Status().Healthy {
			v = 1
		}
		m, err := prometheus.NewConstMetric(h.desc, prometheus.GaugeValue, v, a.election, a.identity)
		if err != nil { // not with labelValue's labels; never panic in a scrape
			m = prometheus.NewInvalidMetric(h.desc, err)
		}
		ch <- m
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c.collectors() {
		x.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, x := range c.collectors() {
		x.Collect(ch)
	}
}

// deleteSeries deletes every series of one elector.
func (c *collector) deleteSeries(election, identity string) {
	match := prometheus.Labels{"election": election, "identity": identity}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		c.isLeader, c.term, c.transitions, c.opDuration, c.errors, c.lastRenew, c.margin, c.marginMin, c.leaderInfo,
		c.handOvers,
	} {
		v.DeletePartialMatch(match)
	}
}

// New registers the fxelection collectors on reg (prometheus.DefaultRegisterer
// when nil) and returns a Metrics to attach electors to. If reg already has
// them (an earlier New, another fx app in the process), New reuses them
// instead of failing. It fails only if reg holds different collectors under
// the same names.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	c := newCollector()
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("register fxelection metrics: %w", err)
		}
		existing, ok := are.ExistingCollector.(*collector)
		if !ok {
			return nil, fmt.Errorf("register fxelection metrics: names taken by a %T: %w", are.ExistingCollector, err)
		}
		c = existing
	}
	return &Metrics{c: c}, nil
}

// Attach feeds e's events into m and returns a function that detaches it
// and deletes e's series (idempotent). e's series are also deleted when e
// stops. Attach before e.Start to see every event; attaching a running
// elector takes its current state from e.Status (counters then start at
// zero). Attaching an elector that is already attached to these collectors
// only counts a reference: its events are still counted once, and its
// series go when the last detach is called or it stops. Attaching nil does
// nothing.
//
// Electors attached to one Registerer must differ in (election, identity),
// which fxelection already requires of candidates for one election.
func (m *Metrics) Attach(e *fxelection.Elector) (detach func()) {
	if m == nil || e == nil {
		return func() {}
	}
	c := m.c
	c.mu.Lock()
	a := c.attached[e]
	if a != nil {
		a.refs++
		c.mu.Unlock()
	} else {
		a = newAttachment(c, e)
		c.attached[e] = a
		// Hold a.mu across AddObserver and Status so that an event racing
		// with the snapshot is applied after it, never overwritten by it.
		a.mu.Lock()
		c.mu.Unlock()
		a.remove = e.AddObserver(a)
		if s := e.Status(); s.Running {
			a.applyStatus(s)
		}
		a.mu.Unlock()
	}
	var once sync.Once
	return func() { once.Do(func() { c.release(a) }) }
}

// release drops one reference to a, detaching it at the last.
func (c *collector) release(a *attachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attached[a.e] != a {
		return // already detached (the elector stopped)
	}
	if a.refs--; a.refs == 0 {
		c.detachLocked(a)
	}
}

// detach removes a for good: no more events are applied and its series
// are deleted.
func (c *collector) detach(a *attachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detachLocked(a)
}

// detachLocked is detach with c.mu held.
func (c *collector) detachLocked(a *attachment) {
	if c.attached[a.e] == a {
		delete(c.attached, a.e)
	}
	a.mu.Lock()
	already := a.detached
	a.detached = true
	remove := a.remove
	a.mu.Unlock()
	if already {
		return
	}
	if remove != nil {
		remove()
	}
	c.deleteSeries(a.election, a.identity)
}
