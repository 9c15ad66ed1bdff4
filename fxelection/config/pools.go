package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// MaxPoolShards bounds a pool's shards (shard_count, or the length of
// shards), and the shards of all a document's pools together: the most
// pool.New accepts, since each shard is an elector in the process (so
// that a document of a few bytes cannot ask for millions of them).
const MaxPoolShards = 100_000

// Pool is one pool in a Document: the JSON form of pool.Config (which see
// for every field's meaning, default and limits) plus the backend it runs
// on. The pool's shard and member elections are named
// "<name>#shard/<shard>" and "<name>#member/<k>" in its store: names no
// user-given name can be (none may contain '#'), so that no election,
// locker's lock or other pool meets them.
type Pool struct {
	// Name is the pool's name (pool.Config.Name), shared by every worker
	// of the pool; it is also the pool's fx name tag, so it must be unique
	// among the document's pools and consist of ASCII letters, digits and
	// "_.-:/". Required.
	Name string `json:"name" config:"required"`
	// Shards are the shards' names (pool.Config.Shards): non-empty,
	// distinct, printable and without '#' (the rule of election names),
	// at most MaxPoolShards. Exactly one of Shards and ShardCount is set.
	Shards []string `json:"shards,omitempty"`
	// ShardCount, when positive, names ShardCount shards "0", "1", …,
	// "<ShardCount-1>"; at most MaxPoolShards. Zero means unset (Shards
	// names the shards).
	ShardCount int `json:"shard_count,omitempty"`
	// Identity is pool.Config.Identity. Default: host, pid and a random
	// suffix.
	Identity string `json:"identity,omitempty"`
	// MaxWorkers is pool.Config.MaxWorkers. Default: 32.
	MaxWorkers int `json:"max_workers,omitempty"`
	// MaxMoves is pool.Config.MaxMoves. Default: the number of shards.
	MaxMoves int `json:"max_moves,omitempty"`
	// LeaseDuration is pool.Config.LeaseDuration. Default: 15s.
	LeaseDuration Duration `json:"lease_duration,omitempty"`
	// RenewDeadline is pool.Config.RenewDeadline. Default: 10s.
	RenewDeadline Duration `json:"renew_deadline,omitempty"`
	// RetryPeriod is pool.Config.RetryPeriod. Default: 2s.
	RetryPeriod Duration `json:"retry_period,omitempty"`
	// Backend is the backend module, inline or by name, as an election's.
	// Required.
	Backend BackendRef `json:"backend" config:"required"`
}

// Config returns p as a pool.Config (OnAcquired, OnReleased and Logger
// unset). With ShardCount set, Shards are "0" to "<ShardCount-1>"; a
// ShardCount that is negative or above MaxPoolShards (Validate reports
// it) gives no shards.
func (p Pool) Config() pool.Config {
	c := pool.Config{
		Name:       p.Name,
		Shards:     p.Shards,
		Identity:   p.Identity,
		MaxWorkers: p.MaxWorkers,
		MaxMoves:   p.MaxMoves,
		Timing: fxelection.Timing{
			LeaseDuration: time.Duration(p.LeaseDuration),
			RenewDeadline: time.Duration(p.RenewDeadline),
			RetryPeriod:   time.Duration(p.RetryPeriod),
		},
	}
	if p.ShardCount > 0 && p.ShardCount <= MaxPoolShards {
		c.Shards = make([]string, p.ShardCount)
		for i := range c.Shards {
			c.Shards[i] = strconv.Itoa(i)
		}
	}
	return c
}

// poolKeys maps pool.Config's field names (as its ConfigError names them)
// to a Pool's keys; the timings and Identity are reported as an
// fxelection.Config's and map as an election's do (configKeys).
var poolKeys = map[string]string{
	"Name": "name", "Name or Shards": "name", "Shards": "shards",
	"MaxWorkers": "max_workers", "MaxMoves": "max_moves",
}

// poolPath points a pool.New error at the key of the field it names
// ("pools[1].max_workers", "pools[1].shards[3]" for Shards[3]), or at the
// pool if it names none. Shards are reported at shard_count when the pool
// counts them.
func poolPath(path string, p Pool, err error) string {
	var ce *fxelection.ConfigError
	if !errors.As(err, &ce) {
		return path
	}
	if i, ok := shardIndex(ce.Field); ok {
		if p.ShardCount != 0 {
			return path + ".shard_count"
		}
		return path + ".shards[" + strconv.Itoa(i) + "]"
	}
	key, ok := poolKeys[ce.Field]
	if !ok {
		key, ok = configKeys[ce.Field]
	}
	if !ok {
		return path
	}
	if key == "shards" && p.ShardCount != 0 {
		key = "shard_count"
	}
	return path + "." + key
}

// shardIndex returns i for pool.ConfigError's field "Shards[i]".
func shardIndex(field string) (int, bool) {
	rest, ok := strings.CutPrefix(field, "Shards[")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// validatePools checks doc's pools (see Document.Validate), reporting
// each problem at its path with fail; backends are checked as an
// election's and marked in used.
func (doc *Document) validatePools(used map[string]bool, fail func(string, error)) {
	names := map[string]int{}
	total := 0 // shards so far
	for i, p := range doc.Pools {
		path := "pools[" + strconv.Itoa(i) + "]"
		nameOK := p.Name != "" && validFxName(p.Name)
		switch j, dup := names[p.Name]; {
		case p.Name == "":
			fail(path+".name", ErrRequired)
		case !nameOK:
			fail(path+".name", fmt.Errorf("%w: a pool name is its fx name tag: want 1 to %d ASCII letters, digits or _.-:/", ErrInvalidValue, backendkit.MaxNameLen))
		case dup:
			fail(path+".name", fmt.Errorf("%w: pool name already used by pools[%d]", ErrInvalidValue, j))
		default:
			names[p.Name] = i
		}
		shardsOK := validateShards(path, p, fail)
		if shardsOK {
			// In all, not per pool: each shard is an elector in this
			// process, and shard_count makes many of a few bytes.
			if total += max(p.ShardCount, len(p.Shards)); total > MaxPoolShards {
				fail(path, fmt.Errorf("%w: the document's pools have more than %d shards in all", ErrInvalidValue, MaxPoolShards))
				shardsOK = false
			}
		}
		doc.validateBackendRef(path+".backend", p.Backend, used, fail)
		if nameOK && shardsOK { // else pool.New would report the same problem again
			if err := checkPool(p); err != nil {
				fail(poolPath(path, p, err), err)
			} else {
				doc.checkRenewLimit(path, p.Backend, p.RenewDeadline, fail)
			}
		}
	}
}

// validateShards checks that p sets exactly one of shards and
// shard_count, within MaxPoolShards, and that the shards are distinct
// user-given names (backendkit.UserNameProblem), each of them. It reports
// whether they are.
func validateShards(path string, p Pool, fail func(string, error)) bool {
	switch {
	case len(p.Shards) > 0 && p.ShardCount != 0:
		fail(path+".shard_count", fmt.Errorf("%w: set shards or shard_count, not both", ErrInvalidValue))
		return false
	case p.ShardCount < 0:
		fail(path+".shard_count", fmt.Errorf("%w: must be positive (is %d)", ErrInvalidValue, p.ShardCount))
		return false
	case p.ShardCount > MaxPoolShards:
		fail(path+".shard_count", fmt.Errorf("%w: at most %d (is %d)", ErrInvalidValue, MaxPoolShards, p.ShardCount))
		return false
	case p.ShardCount > 0:
		return true
	case len(p.Shards) == 0:
		fail(path+".shards", fmt.Errorf("%w: set shards (the shards' names) or shard_count (how many)", ErrRequired))
		return false
	case len(p.Shards) > MaxPoolShards:
		fail(path+".shards", fmt.Errorf("%w: at most %d shards (is %d)", ErrInvalidValue, MaxPoolShards, len(p.Shards)))
		return false
	}
	ok := true
	seen := make(map[string]int, len(p.Shards))
	for k, s := range p.Shards {
		at := path + ".shards[" + strconv.Itoa(k) + "]"
		if s == "" {
			fail(at, ErrRequired)
			ok = false
		} else if problem := backendkit.UserNameProblem(s); problem != "" {
			fail(at, fmt.Errorf("%w: %s", ErrInvalidValue, problem))
			ok = false
		} else if j, dup := seen[s]; dup {
			fail(at, fmt.Errorf("%w: repeats shards[%d]", ErrInvalidValue, j))
			ok = false
		} else {
			seen[s] = k
		}
	}
	return ok
}

// checkPool runs pool.New's validation on p (pool.Config.Validate: every
// shard's name, the timings) without building any shard's elector or
// reaching a backend. It does no I/O and starts nothing. p's shards must
// have passed validateShards. The backend's minimum lease is checked by
// the pool when it starts (see MinLeaseDuration below).
func checkPool(p Pool) error {
	return p.Config().Validate()
}

// MinLeaseDuration forwards backendkit.MinDurationer to the provisioned
// backend, so that a pool on it asks for member slots the store grants
// (pool.Pool.Start checks it); 0 before the backend is provisioned.
func (l *lazyBackend) MinLeaseDuration() time.Duration {
	b, err := l.get()
	if err != nil {
		return 0
	}
	return backendkit.MinLeaseDuration(b)
}
