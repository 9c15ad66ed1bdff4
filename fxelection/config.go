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

// Defaults for zero values (each field's doc states its own), and the
// shortest RetryPeriod accepted: shorter periods would turn every follower
// into a busy loop against the store. Timing's are the only timing
// defaults in the module: lock.Options and pool.Config embed Timing.
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
	defaultRetryPeriod   = 2 * time.Second
	defaultMaxBackoff    = 30 * time.Second
	defaultStopTimeout   = 10 * time.Second
	// defaultHealthThreshold is Health.Threshold's default.
	defaultHealthThreshold = 3
	minRetryPeriod         = 10 * time.Millisecond
)

// Timing is a lease's timing: how long it lasts, how long its holder
// trusts it without a renewal, how often it is renewed and tried for, and
// how far store failures back off. Config, lock.Options and pool.Config
// embed it, and configuration documents decode it under the json keys
// below. The zero value of every field means its documented default; the
// rules: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod, RetryPeriod at
// least 10ms, MaxBackoff at least RetryPeriod, none above
// backendkit.MaxRecordDuration.
type Timing struct {
	// LeaseDuration is how long a lease lasts without renewal. A leader
	// that vanishes is replaced once it has passed and a follower tries
	// again: within LeaseDuration + 1.2 × RetryPeriod where the store
	// expires leases, up to LeaseDuration + 2.4 × RetryPeriod on
	// observed-time stores (S3, NATS KV); each backend's package doc states
	// its bound. At most backendkit.MaxRecordDuration (one year).
	// Default: 15s.
	LeaseDuration time.Duration `json:"lease_duration,omitempty"`

	// RenewDeadline bounds how long a holder keeps believing it holds the
	// lease without a successful renewal, measured on its monotonic clock
	// from the start of the last successful renewal. It must be shorter
	// than LeaseDuration: the difference is the margin for clock-rate drift
	// and scheduling delays that keeps two holders from overlapping.
	// Default: 10s.
	RenewDeadline time.Duration `json:"renew_deadline,omitempty"`

	// RetryPeriod is how often the holder renews and others try to acquire
	// (followers wait RetryPeriod to 1.2×RetryPeriod, jittered). The first
	// renewal after an acquisition comes at a random point in
	// [RetryPeriod/2, RetryPeriod), so elections started together do not
	// renew in lockstep; every later one RetryPeriod after the start of the
	// previous successful one, and sooner after a failed one (see the
	// package doc). On a backend that implements backendkit.BatchRenewer
	// renewals are rounded down to a grid of RetryPeriod/64 slots so that
	// they share round trips: up to one slot earlier, never later. It must
	// be at least 10ms and shorter than RenewDeadline/1.2. Default: 2s.
	RetryPeriod time.Duration `json:"retry_period,omitempty"`

	// MaxBackoff caps the exponential backoff followers use after store
	// failures. At least RetryPeriod, at most backendkit.MaxRecordDuration.
	// Default: 30s, or RetryPeriod if that is longer.
	MaxBackoff time.Duration `json:"max_backoff,omitempty"`
}

// WithDefaults returns t with every zero field set to its default.
func (t Timing) WithDefaults() Timing {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = defaultLeaseDuration
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = defaultRenewDeadline
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = defaultRetryPeriod
	}
	if t.MaxBackoff == 0 {
		// Never shorter than RetryPeriod, which it must not be.
		t.MaxBackoff = max(defaultMaxBackoff, t.RetryPeriod)
	}
	return t
}

// Validate fills in defaults and checks t against the rules on Timing's
// doc. The error is a *ConfigError naming the first bad field
// ("LeaseDuration", …: the path of the field in a struct that embeds
// Timing).
func (t Timing) Validate() error {
	_, err := t.normalize()
	return err
}

// normalize returns t with defaults, or the first problem with it.
func (t Timing) normalize() (Timing, error) {
	t = t.WithDefaults()
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"LeaseDuration", t.LeaseDuration}, {"RenewDeadline", t.RenewDeadline},
		{"RetryPeriod", t.RetryPeriod}, {"MaxBackoff", t.MaxBackoff},
	} {
		if err := checkDuration(d.name, d.v); err != nil {
			return t, err
		}
	}
	if t.RetryPeriod < minRetryPeriod {
		return t, configErr("RetryPeriod", "must be at least %v (is %v)", minRetryPeriod, t.RetryPeriod)
	}
	if t.RenewDeadline >= t.LeaseDuration {
		return t, configErr("RenewDeadline", "must be shorter than LeaseDuration (is %v, LeaseDuration %v)", t.RenewDeadline, t.LeaseDuration)
	}
	if jittered := backoff.JitterMax(t.RetryPeriod); t.RenewDeadline <= jittered {
		return t, configErr("RenewDeadline", "must be longer than 1.2 × RetryPeriod (is %v, 1.2 × RetryPeriod %v)", t.RenewDeadline, jittered)
	}
	if t.MaxBackoff < t.RetryPeriod {
		return t, configErr("MaxBackoff", "must not be shorter than RetryPeriod (is %v, RetryPeriod %v)", t.MaxBackoff, t.RetryPeriod)
	}
	return t, nil
}

// checkDuration checks a duration setting against 0 and
// backendkit.MaxRecordDuration, so that no sum or product of checked
// durations (nor LeaseDuration+StopTimeout in a caller) can overflow.
func checkDuration(field string, v time.Duration) error {
	switch {
	case v < 0:
		return configErr(field, "must be positive (is %v)", v)
	case v > backendkit.MaxRecordDuration:
		return configErr(field, "must be at most %v (is %v)", backendkit.MaxRecordDuration, v)
	}
	return nil
}

// Health gates campaigning on this candidate's own health (Config.Health).
// The zero value means always healthy.
type Health struct {
	// Check, when set, gates campaigning on this candidate's own health
	// (its database connection, its disk). The elector calls it every
	// Interval on a goroutine of its own, each call bounded by a context
	// that ends after Interval. Until a check first succeeds, and from
	// Threshold failures in a row until the next success, the candidate
	// is unhealthy: it makes no attempt to acquire (TryAcquire reports
	// false), and a leader resigns (ReasonUnhealthy: leader work is given
	// StopTimeout, then the lease is released), so that a healthy
	// candidate takes over at once. A check that panics fails. Default
	// (nil): always healthy. Documents set it with a command or an HTTP
	// GET (package config).
	Check func(ctx context.Context) error `json:"-"`

	// Interval is the wait between the end of one Check and the start of
	// the next, and bounds each call. With checks that fail at once, a
	// leader resigns within (Threshold + 1) × Interval of its first
	// failing check's start; a check that hangs adds up to Interval per
	// check. At least 10ms and at most backendkit.MaxRecordDuration.
	// Default: RetryPeriod.
	Interval time.Duration `json:"interval,omitempty"`

	// Threshold is how many failed checks in a row make a healthy
	// candidate unhealthy. At least 1. Default: 3.
	Threshold int `json:"threshold,omitempty"`
}

// Candidacy says how this candidate competes with the others: its
// priority and preemption, and when it leaves a free lease to others. The
// zero value means every candidate is equal and none defers.
type Candidacy struct {
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
	Priority int `json:"priority,omitempty"`

	// PriorityGrace is how long a candidate waits, once it found the lease
	// free, before taking it while a candidate of higher priority was seen
	// recently (see Priority). At most backendkit.MaxRecordDuration.
	// Default: 2 × RetryPeriod.
	PriorityGrace time.Duration `json:"priority_grace,omitempty"`

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
	Preempt bool `json:"preempt,omitempty"`

	// MinTenure is how long a leader leads before it honours a preemption
	// request (Preempt). At most backendkit.MaxRecordDuration. Default:
	// LeaseDuration.
	MinTenure time.Duration `json:"min_tenure,omitempty"`

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
	Defer func() bool `json:"-"`
}

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

	// Timing is the lease's timing (LeaseDuration, RenewDeadline,
	// RetryPeriod, MaxBackoff): see Timing for each field's default and
	// rules.
	Timing

	// Health gates campaigning on this candidate's health. Default: none.
	Health Health

	// Candidacy sets priority, preemption and deferral. Default: none.
	Candidacy Candidacy

	// KeepLeaseOnStop leaves the lease in the store when the elector stops,
	// so it expires after LeaseDuration instead of passing to another
	// candidate at once. Default (false): release on stop.
	KeepLeaseOnStop bool

	// NoRecampaign makes the elector stop campaigning after it loses or
	// resigns leadership, instead of becoming a candidate again. Default
	// (false): re-campaign.
	NoRecampaign bool

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
	c.Timing = c.Timing.WithDefaults()
	if c.StopTimeout == 0 {
		c.StopTimeout = defaultStopTimeout
	}
	if c.Health.Interval == 0 {
		c.Health.Interval = c.RetryPeriod
	}
	if c.Health.Threshold == 0 {
		c.Health.Threshold = defaultHealthThreshold
	}
	if c.Candidacy.PriorityGrace == 0 {
		c.Candidacy.PriorityGrace = 2 * c.RetryPeriod
	}
	if c.Candidacy.MinTenure == 0 {
		c.Candidacy.MinTenure = c.LeaseDuration
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
// durations follow the timing rules on the fields' docs (Timing.Validate's
// among them). The error is a *ConfigError naming the first bad field by
// its path in Config ("Name", "RenewDeadline", "Health.Interval",
// "Candidacy.MinTenure").
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
		return c, configErr("Metadata", "key %s is the core's (set Candidacy.Priority instead)", handover.MetaPriority)
	}
	if c.Candidacy.Priority != 0 {
		if field, problem := backendkit.CheckConfigTexts(c.Name, c.Identity, requestMetadata(c)); field != "" {
			return c, &ConfigError{Field: field, Reason: problem + " (with Priority's metadata)"}
		}
	}
	if c.Candidacy.Preempt {
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
		{"MaxBackoff", c.MaxBackoff}, {"StopTimeout", c.StopTimeout}, {"Health.Interval", c.Health.Interval},
		{"Candidacy.PriorityGrace", c.Candidacy.PriorityGrace}, {"Candidacy.MinTenure", c.Candidacy.MinTenure},
	} {
		if err := checkDuration(d.name, d.v); err != nil {
			return c, err
		}
	}
	if _, err := c.Timing.normalize(); err != nil {
		return c, err
	}
	if c.Health.Interval < minRetryPeriod {
		return c, configErr("Health.Interval", "must be at least %v (is %v)", minRetryPeriod, c.Health.Interval)
	}
	if c.Health.Threshold < 1 {
		return c, configErr("Health.Threshold", "must be at least 1 (is %d)", c.Health.Threshold)
	}
	return c, nil
}

// ConfigError is what New and Config.Validate return for a Config field
// that is wrong: errors.As(err, new(*ConfigError)) gets it. Its message is
// "fxelection: <Field>: <Reason>"; Reason never quotes a text value (a
// metadata key is named when it is itself valid), while durations, which
// are not secrets, are shown.
//
// It is the one configuration error of the module: lock.Options,
// pool.Config and Timing.Validate return it too, each naming the field by
// its Go path in the struct validated.
type ConfigError struct {
	// Field is the bad field's Go path in the struct validated ("Name",
	// "RenewDeadline", "Health.Interval", "Candidacy.MinTenure", a
	// pool's "Shards[3]"). Package config maps it to the document's key
	// through the structs' json tags.
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
	if c.Candidacy.Priority == 0 {
		return c.Metadata
	}
	md := maps.Clone(c.Metadata)
	if md == nil {
		md = make(map[string]string, 1)
	}
	md[handover.MetaPriority] = strconv.Itoa(c.Candidacy.Priority)
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
