package metrics

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection/lock"
)

// Metric names of locks and semaphores, exported by a LockMetrics.
const (
	NameLockWait         = "fxelection_lock_wait_seconds"
	NameLockAcquisitions = "fxelection_lock_acquisitions_total"
	NameLocksHeld        = "fxelection_locks_held"
	NameLockLost         = "fxelection_lock_lost_total"
	NameLockHeld         = "fxelection_lock_held_seconds"
)

// LockOther is the lock label value under which a LockMetrics counts the
// keys beyond LockMetricsOptions.MaxKeys, the keys that
// LockMetricsOptions.Key maps to "" and the keys whose Key call panicked.
const LockOther = "_other"

// DefaultLockMaxKeys is the default of LockMetricsOptions.MaxKeys.
const DefaultLockMaxKeys = 100

// outcomeOther is the outcome label value of an Outcome that package lock
// does not document.
const outcomeOther = "other"

// lockOutcomes are the outcome label values, in the order of their
// indexes (outcomeIndex); the last one, outcomeOther, is not created
// until used.
var lockOutcomes = [...]string{
	string(lock.OutcomeAcquired), string(lock.OutcomeLocked), string(lock.OutcomeCanceled),
	string(lock.OutcomeClosed), string(lock.OutcomeError), outcomeOther,
}

// outcomeIndex returns the index of o in lockOutcomes.
func outcomeIndex(o lock.Outcome) int {
	for i, s := range lockOutcomes[:len(lockOutcomes)-1] {
		if string(o) == s {
			return i
		}
	}
	return len(lockOutcomes) - 1
}

// LockWaitBuckets are the buckets of NameLockWait, in seconds: from 1ms (a
// free lock on a loopback store) to 5 minutes (a waiter queued behind long
// critical sections).
func LockWaitBuckets() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
}

// LockHeldBuckets are the buckets of NameLockHeld, in seconds: from 1ms to
// an hour.
func LockHeldBuckets() []float64 {
	return []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600}
}

// LockMetricsOptions configures a LockMetrics. The zero value means the
// documented defaults.
type LockMetricsOptions struct {
	// MaxKeys bounds the distinct values of the lock label: the first
	// MaxKeys label values seen get series of their own and keep them;
	// every later one is counted under lock="_other" (LockOther). Lock
	// keys may be unbounded (one per user, per request), series must not.
	// Negative values are refused. Default: 100 (DefaultLockMaxKeys).
	MaxKeys int

	// Key, when set, maps a lock's key (or a semaphore's name) to its
	// lock label value, e.g. to strip a per-user suffix so that
	// "report/alice" and "report/bob" share the label "report". It must be
	// a pure function (the same key always gives the same value: a
	// release is counted under the label of its acquisition only if so),
	// cheap, and safe for concurrent use. Its result is made safe as a
	// label value like every other; "" counts the key under LockOther, and
	// so does a call that panics. Default: the key itself.
	Key func(key string) string
}

// LockMetrics turns the events of package lock's Lockers into series: it
// is a lock.Observer. Pass it as lock.Options.Observer to every Locker
// whose locks it should count; one LockMetrics serves any number of
// Lockers, which then share series per key:
//
//	lm, err := metrics.NewLockMetrics(prometheus.DefaultRegisterer, metrics.LockMetricsOptions{})
//	if err != nil { … }
//	locker, err := lock.New(backend, lock.Options{Observer: lm})
//
// Series, all with the label lock (the key of a lock, the name of a
// semaphore; a lock and a semaphore of one name share it):
//
//	fxelection_lock_wait_seconds         histogram  lock, outcome  how long each acquisition call took (Event.Wait)
//	fxelection_lock_acquisitions_total   counter    lock, outcome  acquisition calls, by outcome
//	fxelection_locks_held                gauge      lock           locks (semaphore slots) held now
//	fxelection_lock_lost_total           counter    lock           held locks lost (lock.ErrLost)
//	fxelection_lock_held_seconds         histogram  lock           how long each lock was held, to its release or loss (Event.Held)
//
// The outcome label is the lock.Outcome of the acquisition: acquired,
// locked, canceled, closed or error ("other" for any value package lock
// does not document). A label's counters and gauge are created at zero
// with its first event, histograms with their first observation. Series
// are never deleted: their number is bounded by MaxKeys + 1 lock values
// (see LockMetricsOptions), not by the keys' lifetime.
//
// ObserveLock never blocks on anything but a short mutex, does no I/O and
// never panics on a hostile key (invalid UTF-8, control characters, any
// length); it is safe for concurrent use.
type LockMetrics struct {
	maxKeys int
	key     func(string) string

	wait         *prometheus.HistogramVec
	acquisitions *prometheus.CounterVec
	held         *prometheus.GaugeVec
	lost         *prometheus.CounterVec
	heldFor      *prometheus.HistogramVec

	mu     sync.Mutex
	series map[string]*lockSeries // by lock label value, LockOther included
	own    int                    // label values in series other than LockOther
}

var _ lock.Observer = (*LockMetrics)(nil)

// lockSeries holds the children of one lock label value.
type lockSeries struct {
	label   string
	holders int64 // acquisitions minus ends: below zero while an end is seen before its acquisition
	held    prometheus.Gauge
	lost    prometheus.Counter
	heldFor prometheus.Observer                    // created with the first end
	acq     [len(lockOutcomes)]prometheus.Counter  // outcomeOther's created with its first use
	wait    [len(lockOutcomes)]prometheus.Observer // each created with its first use
}

// NewLockMetrics registers the lock series on reg
// (prometheus.DefaultRegisterer when nil) and returns the LockMetrics to
// pass as lock.Options.Observer. It fails for a negative MaxKeys and if
// reg already has lock series: create one LockMetrics per registerer and
// give it to every Locker.
func NewLockMetrics(reg prometheus.Registerer, opts LockMetricsOptions) (*LockMetrics, error) {
	if opts.MaxKeys < 0 {
		return nil, errors.New("metrics: LockMetricsOptions.MaxKeys: must not be negative")
	}
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	m := newLockMetrics(opts)
	if err := reg.Register(lockCollector{m}); err != nil {
		return nil, fmt.Errorf("register fxelection lock metrics (one LockMetrics per registerer serves every Locker): %w", err)
	}
	return m, nil
}

// newLockMetrics returns an unregistered LockMetrics with opts' defaults
// filled in.
func newLockMetrics(opts LockMetricsOptions) *LockMetrics {
	if opts.MaxKeys == 0 {
		opts.MaxKeys = DefaultLockMaxKeys
	}
	return &LockMetrics{
		maxKeys: opts.MaxKeys,
		key:     opts.Key,
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameLockWait,
			Help:    "How long each lock acquisition call (Acquire, TryAcquire, semaphores) took, by outcome (acquired, locked, canceled, closed, error).",
			Buckets: LockWaitBuckets(),
		}, []string{"lock", "outcome"}),
		acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameLockAcquisitions,
			Help: "Lock acquisition calls (Acquire, TryAcquire, semaphores), by outcome (acquired, locked, canceled, closed, error).",
		}, []string{"lock", "outcome"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameLocksHeld,
			Help: "Locks (semaphore slots) held now by the Lockers observed: acquired and not yet released or lost.",
		}, []string{"lock"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameLockLost,
			Help: "Held locks lost: a renewal found the lease gone, or none succeeded within the renew deadline.",
		}, []string{"lock"}),
		heldFor: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameLockHeld,
			Help:    "How long each lock was held, from the start of the attempt that took it to its release or loss.",
			Buckets: LockHeldBuckets(),
		}, []string{"lock"}),
		series: map[string]*lockSeries{},
	}
}

// collectors returns the vectors of m.
func (m *LockMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.wait, m.acquisitions, m.held, m.lost, m.heldFor}
}

// lockCollector is the one prometheus.Collector a LockMetrics registers.
type lockCollector struct{ m *LockMetrics }

// Describe implements prometheus.Collector.
func (c lockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c.m.collectors() {
		x.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c lockCollector) Collect(ch chan<- prometheus.Metric) {
	for _, x := range c.m.collectors() {
		x.Collect(ch)
	}
}

// ObserveLock implements lock.Observer. Events of other kinds than
// EventAcquire, EventRelease and EventLost are ignored; a nil LockMetrics
// ignores every event.
func (m *LockMetrics) ObserveLock(ev lock.Event) {
	if m == nil {
		return
	}
	switch ev.Kind {
	case lock.EventAcquire, lock.EventRelease, lock.EventLost:
	default:
		return
	}
	label := m.label(ev.Key) // outside mu: Key is the application's code
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.seriesLocked(label)
	switch ev.Kind {
	case lock.EventAcquire:
		o := outcomeIndex(ev.Outcome)
		if s.acq[o] == nil {
			s.acq[o] = m.acquisitions.WithLabelValues(s.label, lockOutcomes[o])
		}
		s.acq[o].Inc()
		if s.wait[o] == nil {
			s.wait[o] = m.wait.WithLabelValues(s.label, lockOutcomes[o])
		}
		s.wait[o].Observe(seconds(ev.Wait))
		if ev.Outcome == lock.OutcomeAcquired {
			s.setHolders(s.holders + 1)
		}
	default: // release or loss
		s.setHolders(s.holders - 1)
		if s.heldFor == nil {
			s.heldFor = m.heldFor.WithLabelValues(s.label)
		}
		s.heldFor.Observe(seconds(ev.Held))
		if ev.Kind == lock.EventLost {
			s.lost.Inc()
		}
	}
}

// setHolders sets the holder count and the gauge. An end is reported by
// the Lock's own goroutine and its acquisition by the caller's, so the end
// of a lock lost at once can be seen first: the count then dips below
// zero, and the gauge shows 0 until the acquisition is seen.
func (s *lockSeries) setHolders(n int64) {
	s.holders = n
	s.held.Set(float64(max(n, 0)))
}

// label returns the lock label value of key, before the cap on distinct
// values: Key's value (LockOther when it is "" or Key panics), made safe.
func (m *LockMetrics) label(key string) string {
	if m.key != nil {
		key = m.mapKey(key)
	}
	if v := labelValue(key); v != "" {
		return v
	}
	return LockOther
}

// mapKey calls the Key option; "" if it panics.
func (m *LockMetrics) mapKey(key string) (mapped string) {
	defer func() {
		if recover() != nil {
			mapped = ""
		}
	}()
	return m.key(key)
}

// seriesLocked returns the series of label, created if needed: a label
// value seen before keeps its series; a new one gets its own while fewer
// than maxKeys have one, else LockOther's. m.mu must be held.
func (m *LockMetrics) seriesLocked(label string) *lockSeries {
	if s, ok := m.series[label]; ok {
		return s
	}
	if label != LockOther {
		if m.own >= m.maxKeys {
			return m.seriesLocked(LockOther)
		}
		m.own++
	}
	s := &lockSeries{
		label: label,
		held:  m.held.WithLabelValues(label),
		lost:  m.lost.WithLabelValues(label),
	}
	s.held.Set(0)
	for o := range len(lockOutcomes) - 1 { // every documented outcome starts at 0
		s.acq[o] = m.acquisitions.WithLabelValues(label, lockOutcomes[o])
	}
	m.series[label] = s
	return s
}

// seconds returns d in seconds, negative durations as 0.
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }
