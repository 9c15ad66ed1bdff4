package fxelection

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
	"github.com/fxelection/fxelection/fxelection/internal/names"
	"github.com/fxelection/fxelection/internal/backoff"
)

// Defaults for Config's zero values (each field's doc states its own), and
// the shortest RetryPeriod accepted: shorter periods would turn every
// follower into a busy loop against the store.
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
	defaultRetryPeriod   = 2 * time.Second
	defaultMaxBackoff    = 30 * time.Second
	defaultStopTimeout   = 10 * time.Second
	// defaultHealthThreshold is Config.HealthThreshold's default.
	defaultHealthThreshold = 3
	minRetryPeriod         = 10 * time.Millisecond
)

// DefaultRenewDeadline is Config.RenewDeadline's default (and
// lock.Options' and pool.Config's).
const DefaultRenewDeadline = defaultRenewDeadline

// Config configures one Elector. The zero value of every field but Name means
// its documented default.
type Config struct {
	// Name identifies the election: candidates with the same Name on the same
	// backend compete for one lease. Required; at most 200 bytes of printable
	// UTF-8, without '#' (backendkit.ReservedNameChar, which names the
	// library's own records; backendkit.UserNameProblem).
	Name string

	// Identity names this candidate; it must be unique among the candidates.
	// A fixed identity lets a restarted process re-acquire its own lease at
	// once. At most 200 bytes of printable UTF-8. Default: host name, pid
	// and a short random suffix.
	Identity string

	// Metadata is advertised with the lease to followers (for example the
	// leader's address). Small: at most 4 KiB of keys and values, no empty
	// key, and keys and values printable UTF-8 (no tab, newline or other
	// control character), as for Name and Identity.
	Metadata map[string]string

	// LeaseDuration is how long a lease lasts without renewal. A leader
	// that vanishes is replaced once it has passed and a follower tries
	// again: within LeaseDuration + 1.2 × RetryPeriod where the store
	// expires leases, up to LeaseDuration + 2.4 × RetryPeriod on
	// observed-time stores (S3, NATS KV); each backend's package doc states
	// its bound. At most backendkit.MaxRecordDuration (one year).
	// Default: 15s.
	LeaseDuration time.Duration

	// RenewDeadline bounds how long a leader keeps believing it leads without
	// a successful renewal, measured on its monotonic clock from the start of
	// the last successful renewal. It must be shorter than LeaseDuration: the
	// difference is the margin for clock-rate drift and scheduling delays
	// that keeps two leaders from overlapping. Default: 10s.
	RenewDeadline time.Duration

	// RetryPeriod is how often the leader renews and followers try to acquire
	// (followers wait RetryPeriod to 1.2×RetryPeriod, jittered). The first
	// renewal after an acquisition comes at a random point in
	// [RetryPeriod/2, RetryPeriod), so elections started together do not
	// renew in lockstep; every later one RetryPeriod after the start of the
	// previous successful one, and sooner after a failed one (see the
	// package doc). On a backend that implements backendkit.BatchRenewer
	// renewals are rounded down to a grid of RetryPeriod/64 slots so that
	// they share round trips: up to one slot earlier, never later. It must
	// be at least 10ms and shorter than RenewDeadline/1.2. Default: 2s.
	RetryPeriod time.Duration

	// MaxBackoff caps the exponential backoff followers use after store
	// failures. At most backendkit.MaxRecordDuration. Default: 30s.
	MaxBackoff time.Duration

	// KeepLeaseOnStop leaves the lease in the store when the elector stops,
	// so it expires after LeaseDuration instead of passing to another
	// candidate at once. Default (false): release on stop.
	KeepLeaseOnStop bool

	// NoRecampaign makes the elector stop campaigning after it loses or
	// resigns leadership, instead of becoming a candidate again. Default
	// (false): re-campaign.
	NoRecampaign bool

	// HealthCheck, when set, gates campaigning on this candidate's own
	// health (its database connection, its disk). The elector calls it
	// every HealthInterval on a goroutine of its own, each call bounded by
	// a context that ends after HealthInterval. Until a check first
	// succeeds, and from HealthThreshold failures in a row until the next
	// success, the candidate is unhealthy: it makes no attempt to acquire
	// (TryAcquire reports false), and a leader resigns (ReasonUnhealthy:
	// leader work is given StopTimeout, then the lease is released), so
	// that a healthy candidate takes over at once. A check that panics
	// fails. Default (nil): always healthy.
	HealthCheck func(ctx context.Context) error

	// HealthInterval is the wait between the end of one HealthCheck and
	// the start of the next, and bounds each call. With checks that fail
	// at once, a leader resigns within (HealthThreshold + 1) ×
	// HealthInterval of its first failing check's start; a check that
	// hangs adds up to HealthInterval per check. At least 10ms and at
	// most backendkit.MaxRecordDuration. Default: RetryPeriod.
	HealthInterval time.Duration

	// HealthThreshold is how many failed checks in a row make a healthy
	// candidate unhealthy. At least 1. Default: 3.
	HealthThreshold int

	// Priority orders candidates: higher is preferred. It is advertised in
	// the lease record (metadata key handover.MetaPriority; Config.Metadata must not
	// use that key) when not 0. A candidate that has seen one of higher
	// priority within the last LeaseDuration + PriorityGrace waits until
	// it has found the lease free for PriorityGrace before taking it, so
	// that the higher one takes it first if it is still there; with
	// Preempt, a candidate of higher priority than the leader's asks it to
	// hand over. In a mixed-version fleet give the new version the higher
	// priority: leadership moves to it as it arrives, and does not move
	// back to the old. Default: 0.
	Priority int

	// PriorityGrace is how long a candidate waits, once it found the lease
	// free, before taking it while a candidate of higher priority was seen
	// recently (see Priority). At most backendkit.MaxRecordDuration.
	// Default: 2 × RetryPeriod.
	PriorityGrace time.Duration

	// Preempt turns on preemption by priority, on both sides: as a
	// follower of a leader with a lower priority this candidate holds the
	// election's preemption request record ("<Name>#preempt", so Name must
	// leave room for those 8 bytes); as a leader it reads that record
	// after each successful renewal once it has led for MinTenure, and
	// hands over (ResignTo; handover.ReasonPreempted) to its holder when that
	// holder's priority is above its own. Leadership therefore only moves
	// to a strictly higher priority and at most once per MinTenure: it
	// never flaps between equal or alternating candidates. The cost: one
	// more read per renewal while leading, one more write per attempt
	// while following a leader of lower priority. Default: off.
	Preempt bool

	// MinTenure is how long a leader leads before it honours a preemption
	// request (Preempt). At most backendkit.MaxRecordDuration. Default:
	// LeaseDuration.
	MinTenure time.Duration

	// Defer, when set, is asked before every attempt to acquire; while it
	// returns true this candidate leaves a free lease to others: it reads
	// the record (Backend.Get) instead of acquiring, and takes the lease
	// only when the record is held by its own identity — a hint handed to
	// it by ResignTo, or its own record from before a restart. It does not
	// affect a leader. Pools use it to stop taking shards beyond their
	// share; a standby that should lead only when handed the lease can
	// return true always (then nobody else may be able to take an expired
	// lease if every candidate defers). It must be fast and must not block;
	// one that panics counts as false. Default (nil): never defer.
	Defer func() bool

	// ExitOnLoss, for apps built with fx, shuts the app down with exit code
	// 1 (fx.Shutdowner, fx.ExitCode(1)) when this elector stops leading
	// for any reason but Stop and the app's stop (lease lost, renew
	// deadline, Resign, unhealthy), for platforms that restart a process
	// rather than let it campaign again. The elector runs on until the
	// app's stop reaches it (set NoRecampaign too to keep it from
	// campaigning meanwhile), and that stop releases as usual. Only Elector.Hook acts on it, as Module,
	// Named and configuration documents do; New and Start ignore it.
	// Default (false): the elector campaigns again (unless NoRecampaign).
	ExitOnLoss bool

	// StopTimeout bounds Stop (waiting for the campaign loop and leader
	// work, then releasing) when the context given to Stop has no earlier
	// deadline; see Elector.Stop for the exact bound. At most
	// backendkit.MaxRecordDuration. Default: 10s.
	StopTimeout time.Duration

	// Callbacks are called on leadership changes and store failures, never on
	// the goroutine that renews the lease.
	Callbacks Callbacks

	// Logger receives the elector's logs. Default (nil): no logs.
	Logger *slog.Logger

	// derived lets Name be one the library derived (names.AllowDerived):
	// it then follows backendkit.NameProblem instead of UserNameProblem.
	derived bool
}

func init() {
	names.AllowDerived = func(cfg any) {
		if c, ok := cfg.(*Config); ok {
			c.derived = true
		}
	}
}

// withDefaults returns c with defaults filled in.
func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = defaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = defaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = defaultRetryPeriod
	}
	if c.MaxBackoff == 0 {
		// Never shorter than RetryPeriod, which it must not be.
		c.MaxBackoff = max(defaultMaxBackoff, c.RetryPeriod)
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = defaultStopTimeout
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = c.RetryPeriod
	}
	if c.HealthThreshold == 0 {
		c.HealthThreshold = defaultHealthThreshold
	}
	if c.PriorityGrace == 0 {
		c.PriorityGrace = 2 * c.RetryPeriod
	}
	if c.MinTenure == 0 {
		c.MinTenure = c.LeaseDuration
	}
	if c.Identity == "" {
		c.Identity = DefaultIdentity()
	}
	return c
}

// Validate fills in defaults and checks c: Name follows the rule of
// user-given names (backendkit.UserNameProblem: no '#'); Name, Identity
// and Metadata follow the text rules that Lease.Validate applies to every record a
// backend reads (valid, printable UTF-8 within backendkit.MaxNameLen, backendkit.MaxIdentityLen
// and backendkit.MaxMetadataBytes; no empty metadata key), so that whatever New
// accepts every backend can store and every follower can read back; the
// durations follow the timing rules on the fields' docs. The error is a
// *ConfigError naming the first bad field.
func (c Config) Validate() error {
	_, err := c.normalize()
	return err
}

func (c Config) normalize() (Config, error) {
	c = c.withDefaults()
	nameRule := backendkit.UserNameProblem
	if c.derived {
		nameRule = backendkit.NameProblem
	}
	if problem := nameRule(c.Name); problem != "" {
		return c, &ConfigError{Field: "Name", Reason: problem}
	}
	if field, problem := backendkit.CheckConfigTexts(c.Name, c.Identity, c.Metadata); field != "" {
		return c, &ConfigError{Field: field, Reason: problem}
	}
	if _, ok := c.Metadata[handover.MetaPriority]; ok {
		return c, configErr("Metadata", "key %s is the core's (set Priority instead)", handover.MetaPriority)
	}
	if c.Priority != 0 {
		if field, problem := backendkit.CheckConfigTexts(c.Name, c.Identity, requestMetadata(c)); field != "" {
			return c, &ConfigError{Field: field, Reason: problem + " (with Priority's metadata)"}
		}
	}
	if c.Preempt {
		if problem := backendkit.NameProblem(names.Preempt(c.Name)); problem != "" {
			return c, configErr("Name", "%s (with the %d bytes Preempt adds for its request record)", problem, names.PreemptLen)
		}
	}
	// Every duration is checked against backendkit.MaxRecordDuration first, so that
	// no sum or product below (nor LeaseDuration+StopTimeout in a caller)
	// can overflow.
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"LeaseDuration", c.LeaseDuration}, {"RenewDeadline", c.RenewDeadline}, {"RetryPeriod", c.RetryPeriod},
		{"MaxBackoff", c.MaxBackoff}, {"StopTimeout", c.StopTimeout}, {"HealthInterval", c.HealthInterval},
		{"PriorityGrace", c.PriorityGrace}, {"MinTenure", c.MinTenure},
	} {
		switch {
		case d.v < 0:
			return c, configErr(d.name, "must be positive (is %v)", d.v)
		case d.v > backendkit.MaxRecordDuration:
			return c, configErr(d.name, "must be at most %v (is %v)", backendkit.MaxRecordDuration, d.v)
		}
	}
	if c.RetryPeriod < minRetryPeriod {
		return c, configErr("RetryPeriod", "must be at least %v (is %v)", minRetryPeriod, c.RetryPeriod)
	}
	if c.RenewDeadline >= c.LeaseDuration {
		return c, configErr("RenewDeadline", "must be shorter than LeaseDuration (is %v, LeaseDuration %v)", c.RenewDeadline, c.LeaseDuration)
	}
	if jittered := backoff.JitterMax(c.RetryPeriod); c.RenewDeadline <= jittered {
		return c, configErr("RenewDeadline", "must be longer than 1.2 × RetryPeriod (is %v, 1.2 × RetryPeriod %v)", c.RenewDeadline, jittered)
	}
	if c.HealthInterval < minRetryPeriod {
		return c, configErr("HealthInterval", "must be at least %v (is %v)", minRetryPeriod, c.HealthInterval)
	}
	if c.HealthThreshold < 1 {
		return c, configErr("HealthThreshold", "must be at least 1 (is %d)", c.HealthThreshold)
	}
	if c.MaxBackoff < c.RetryPeriod {
		return c, configErr("MaxBackoff", "must not be shorter than RetryPeriod (is %v, RetryPeriod %v)", c.MaxBackoff, c.RetryPeriod)
	}
	return c, nil
}

// ConfigError is what New and Config.Validate return for a Config field
// that is wrong: errors.As(err, new(*ConfigError)) gets it. Its message is
// "fxelection: <Field>: <Reason>"; Reason never quotes a text value (a
// metadata key is named when it is itself valid), while durations, which
// are not secrets, are shown.
type ConfigError struct {
	// Field is the Config field's Go name ("Name", "RenewDeadline", …).
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string { return "fxelection: " + e.Field + ": " + e.Reason }

func configErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// DefaultIdentity returns host name, pid and a random suffix, e.g.
// "web-1-4242-9f3a1c": unique per process even when pids repeat in containers.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// requestMetadata returns the metadata an elector's records carry: the
// Config's, plus handover.MetaPriority when Priority is not 0.
func requestMetadata(c Config) map[string]string {
	if c.Priority == 0 {
		return c.Metadata
	}
	md := maps.Clone(c.Metadata)
	if md == nil {
		md = make(map[string]string, 1)
	}
	md[handover.MetaPriority] = strconv.Itoa(c.Priority)
	return md
}

// priorityOf returns the priority a lease record advertises (0 when none).
func priorityOf(l Lease) int {
	p, err := strconv.Atoi(l.Metadata[handover.MetaPriority])
	if err != nil {
		return 0
	}
	return p
}
