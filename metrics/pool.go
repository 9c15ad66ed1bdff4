package metrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection/pool"
)

// Metric names of a pool worker, exported by RegisterPool.
const (
	NamePoolOwned    = "fxelection_pool_owned_shards"
	NamePoolTarget   = "fxelection_pool_target_shards"
	NamePoolMembers  = "fxelection_pool_members"
	NamePoolMoves    = "fxelection_pool_moves_total"
	NamePoolAcquired = "fxelection_pool_acquired_total"
	NamePoolLost     = "fxelection_pool_lost_total"
	// NamePoolMismatched and NamePoolSlotRefused report a pool that
	// cannot balance as configured: members with another shard list, and
	// member slots the store refused for their lease duration.
	NamePoolMismatched  = "fxelection_pool_mismatched_members"
	NamePoolSlotRefused = "fxelection_pool_slot_refused_total"
)

// RegisterPool registers on reg (prometheus.DefaultRegisterer when nil) the
// series of one pool worker p, labelled pool=name (name is the pool's
// Config.Name, as a label value made safe like the others). They are read
// from p.Status at each scrape:
//
//	fxelection_pool_owned_shards   gauge    shards this worker owns (Status.Owned)
//	fxelection_pool_target_shards  gauge    the share it aims at (Status.Target)
//	fxelection_pool_members        gauge    live workers at its last scan (Status.Members)
//	fxelection_pool_moves_total    counter  shards it has handed over since Start (Status.Moves)
//	fxelection_pool_acquired_total counter  shard leaderships it has taken since Start (Status.Acquired)
//	fxelection_pool_lost_total     counter  shard leaderships it lost, not handed over or stopped (Status.Lost)
//	fxelection_pool_mismatched_members gauge live members with another shard list or MaxWorkers (Status.Mismatched)
//	fxelection_pool_slot_refused_total counter member slot acquisitions refused for their duration (Status.SlotRefused)
//
// Register p before or after p.Start; call unregister (idempotent) when p
// has stopped, which removes its series. RegisterPool fails for a nil p or
// an empty name, or if reg already has a pool of that name: register each
// worker once, and give two workers of one pool in one process (tests)
// registerers that tell them apart (prometheus.WrapRegistererWith).
//
// The per-shard electors of p are ordinary electors: attach them with
// Metrics.Attach (p.Elector) for their own series.
func RegisterPool(reg prometheus.Registerer, name string, p *pool.Pool) (unregister func(), err error) {
	if p == nil {
		return nil, errors.New("metrics: RegisterPool: nil pool")
	}
	if name == "" {
		return nil, errors.New("metrics: RegisterPool: empty pool name")
	}
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	c := newPoolCollector(name, p)
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register fxelection pool %q metrics: %w", labelValue(name), err)
	}
	var once sync.Once
	return func() { once.Do(func() { reg.Unregister(c) }) }, nil
}

// poolCollector exports one pool worker's Status, read at each scrape. The
// pool label is a constant label of its descriptors, so that the workers
// of several pools register side by side on one registry.
type poolCollector struct {
	p                             *pool.Pool
	owned, target, members, moves *prometheus.Desc
	acquired, lost                *prometheus.Desc
	mismatched, refused           *prometheus.Desc
}

var _ prometheus.Collector = (*poolCollector)(nil)

// newPoolCollector returns the collector of p, labelled pool=name; p may be
// nil for Describe only.
func newPoolCollector(name string, p *pool.Pool) *poolCollector {
	l := prometheus.Labels{"pool": labelValue(name)}
	return &poolCollector{
		p: p,
		owned: prometheus.NewDesc(NamePoolOwned,
			"Shards this pool worker owns now (Status.Owned), read at each scrape.", nil, l),
		target: prometheus.NewDesc(NamePoolTarget,
			"Share of the shards this pool worker aims at: ceil(shards / members) (Status.Target), read at each scrape.", nil, l),
		members: prometheus.NewDesc(NamePoolMembers,
			"Live workers of the pool at this worker's last scan, itself included once it holds a member slot (Status.Members).", nil, l),
		moves: prometheus.NewDesc(NamePoolMoves,
			"Shards this pool worker has handed over to others since it started (Status.Moves).", nil, l),
		acquired: prometheus.NewDesc(NamePoolAcquired,
			"Shard leaderships this pool worker has taken since it started, free, handed over or after an owner failed (Status.Acquired).", nil, l),
		lost: prometheus.NewDesc(NamePoolLost,
			"Shard leaderships of this pool worker that ended other than by a hand-over or Stop: lease lost, renew deadline, health (Status.Lost).", nil, l),
		mismatched: prometheus.NewDesc(NamePoolMismatched,
			"Live members of the pool that balance over another shard list or MaxWorkers than this worker, at its last scan (Status.Mismatched).", nil, l),
		refused: prometheus.NewDesc(NamePoolSlotRefused,
			"Member slot acquisitions of this pool worker that the store refused for their lease duration since it started (Status.SlotRefused).", nil, l),
	}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.owned
	ch <- c.target
	ch <- c.members
	ch <- c.moves
	ch <- c.acquired
	ch <- c.lost
	ch <- c.mismatched
	ch <- c.refused
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Status()
	for _, m := range []struct {
		d *prometheus.Desc
		t prometheus.ValueType
		v float64
	}{
		{c.owned, prometheus.GaugeValue, float64(s.Owned)},
		{c.target, prometheus.GaugeValue, float64(s.Target)},
		{c.members, prometheus.GaugeValue, float64(s.Members)},
		{c.moves, prometheus.CounterValue, float64(s.Moves)},
		{c.acquired, prometheus.CounterValue, float64(s.Acquired)},
		{c.lost, prometheus.CounterValue, float64(s.Lost)},
		{c.mismatched, prometheus.GaugeValue, float64(s.Mismatched)},
		{c.refused, prometheus.CounterValue, float64(s.SlotRefused)},
	} {
		metric, err := prometheus.NewConstMetric(m.d, m.t, m.v)
		if err != nil { // not with constant labels only; never panic in a scrape
			metric = prometheus.NewInvalidMetric(m.d, err)
		}
		ch <- metric
	}
}
