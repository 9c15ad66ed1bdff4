// Package redisfence guards writes to Redis with fxelection's fencing term.
// Every guarded write is one Lua script that reads the election's fence
// key, refuses the write when the caller's term is lower than the term
// stored there, and otherwise raises the stored term to the caller's and
// performs the write — atomically, as Redis runs a script without
// interleaving other commands:
//
//	ran, err := elector.RunIfLeader(ctx, func(ctx context.Context) error {
//		// term from ctx; errors.Is(err, fence.ErrStaleTerm): deposed
//		return guard.Set(ctx, "app:{billing}:report", body, 0)
//	})
//
// Set, HSet and XAdd cover the common writes; NewScript wraps a Lua script
// of the caller's own with the same check, for anything else (several
// keys, conditional logic).
//
// # Keys and Redis Cluster
//
// The fence key of an election is
//
//	<prefix>{<election>}:fence
//
// (prefix "fxelection:" by default; '{', '}' and '%' in the election name are
// percent-escaped, as the lease backend does). A script may only touch keys
// in one hash slot on Redis Cluster, so the keys a guarded write touches must
// carry the same hash tag: HashTag returns it ("{billing}"), and a key such
// as "app:{billing}:report" is in the fence key's slot. On a single node or
// with Sentinel any key names work. A key in another slot makes Redis
// Cluster answer CROSSSLOT, which the guard returns as an error (nothing is
// written).
//
// # Guarantees and limits
//
// Once a write with term T has been accepted, writes with lower terms are
// refused for as long as the fence key exists. The fence key has no expiry;
// do not let it be evicted (maxmemory-policy noeviction or volatile-*), and
// run Redis with appendonly yes if a restart must not forget it: a fence key
// lost to FLUSHALL, eviction or a restart without persistence accepts any
// term again until the next guarded write. So does a fail-over to a replica
// that had not yet received the last writes (Redis replicates
// asynchronously): a newer term the primary acknowledged is lost with it,
// and an older writer is accepted until the newer term writes again
// (RELIABILITY.md, "Store fail-over and durability"); have the leader call
// Advance after a fail-over. Redis does not roll back a script that fails
// half-way (an error raised by the caller's script after it wrote): the
// fence is raised before the caller's part runs. Terms are compared as
// decimal strings, so every term up to backendkit.MaxTerm works whatever
// backend issued it.
package redisfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/modules/redis/internal/rediskey"
)

// DefaultKeyPrefix is the fence key prefix when Options.KeyPrefix is empty
// (the same as the Redis lease backend's).
const DefaultKeyPrefix = rediskey.DefaultPrefix

// Options configure a Guard. The zero value uses the defaults.
type Options struct {
	// KeyPrefix starts every fence key. It should not contain '{' or '}'.
	// Default: "fxelection:".
	KeyPrefix string
}

// Guard performs fenced writes through a go-redis client. It is safe for
// concurrent use and does not own the client.
type Guard struct {
	client redis.Scripter
	prefix string
}

// New returns a Guard writing through client (a *redis.Client, or a
// Cluster, Sentinel failover or universal client; not a pipeline, whose
// results arrive only at Exec). It does no I/O. Set ContextTimeoutEnabled on
// the client so writes honour context deadlines.
func New(client redis.Scripter, opts Options) *Guard {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	return &Guard{client: client, prefix: opts.KeyPrefix}
}

// HashTag returns the Redis Cluster hash tag of election's fence key, e.g.
// "{billing}". Put it in the names of the keys a guarded write touches so
// they share the fence key's slot.
func HashTag(election string) string { return rediskey.HashTag(election) }

// FenceKey returns the name of election's fence key, which holds the
// highest term seen as a decimal string.
func (g *Guard) FenceKey(election string) string { return rediskey.Key(g.prefix, election, "fence") }

// Script is a Lua script of the caller's that runs behind the fence check.
// Create it once with NewScript and run it with Guard.Run.
type Script struct{ s *redis.Script }

// NewScript wraps body, a Lua script written as for EVAL, so that it runs
// only after the fence check passed, in the same atomic script. Inside body,
// KEYS and ARGV are the caller's own (the fence key and term are not among
// them) and whatever body returns is Run's result.
func NewScript(body string) *Script {
	return &Script{s: redis.NewScript(prelude + "local function body(KEYS, ARGV)\n" + body + "\nend\nreturn body(k, a)\n")}
}

// prelude checks and raises the fence (KEYS[1], term in ARGV[1]) and leaves
// the caller's keys and arguments in k and a. Terms are canonical decimal
// strings compared by length, then bytes: exact for every int64.
const prelude = `
local function valid(s)
  return #s >= 1 and #s <= 19 and string.find(s, '^[1-9]%d*$') ~= nil and (#s < 19 or s <= '9223372036854775807')
end
local term = ARGV[1]
local cur = redis.call('GET', KEYS[1])
if cur then
  if not valid(cur) then return redis.error_reply('FXFENCEINVALID the fence key holds a value that is not a term') end
  if #term < #cur or (#term == #cur and term < cur) then
    return redis.error_reply('FXFENCESTALE ' .. cur)
  end
end
if cur ~= term then redis.call('SET', KEYS[1], term) end
local k, a = {}, {}
for i = 2, #KEYS do k[i - 1] = KEYS[i] end
for i = 2, #ARGV do a[i - 1] = ARGV[i] end
`

var (
	setScript     = NewScript(`if #ARGV > 1 then return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end return redis.call('SET', KEYS[1], ARGV[1])`)
	hsetScript    = NewScript(`return redis.call('HSET', KEYS[1], unpack(ARGV))`)
	xaddScript    = NewScript(`return redis.call('XADD', KEYS[1], '*', unpack(ARGV))`)
	advanceScript = NewScript(`return 1`)
)

// Run runs s behind the fence check with the token in ctx (fence.FromContext:
// the leader context's lease, or fence.WithToken) and returns what s
// returned. keys must all be in the fence key's hash slot on Redis Cluster.
// A stale term gives a *fence.StaleTermError (matching fence.ErrStaleTerm)
// and s does not run; a ctx without a token gives fence.ErrNoToken; an
// out-of-range token an error matching fence.ErrInvalidToken; a fence key
// holding something other than a term an error matching
// backendkit.ErrInvalidRecord. Other errors are Redis's or the script's
// (redacted).
func (g *Guard) Run(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	tok, err := fence.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errors.New("redisfence: script is nil")
	}
	allKeys := make([]string, 0, len(keys)+1)
	allKeys = append(append(allKeys, g.FenceKey(tok.Election)), keys...)
	allArgs := make([]any, 0, len(args)+1)
	allArgs = append(append(allArgs, strconv.FormatUint(tok.Term, 10)), args...)
	v, err := s.s.Run(ctx, g.client, allKeys, allArgs...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, g.mapErr(tok, err)
	}
	return v, nil
}

// Set sets key to value (with expiry ttl, if positive) when the term in ctx
// is not stale; see Run for the errors.
func (g *Guard) Set(ctx context.Context, key string, value any, ttl time.Duration) error {
	args := []any{value}
	if ttl > 0 {
		args = append(args, max(ttl.Milliseconds(), 1))
	}
	_, err := g.Run(ctx, setScript, []string{key}, args...)
	return err
}

// HSet sets field-value pairs of the hash key when the term in ctx is not
// stale, and returns how many fields were added; see Run for the errors.
func (g *Guard) HSet(ctx context.Context, key string, fieldValues ...any) (int64, error) {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return 0, errors.New("redisfence: HSet needs field-value pairs")
	}
	v, err := g.Run(ctx, hsetScript, []string{key}, fieldValues...)
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return n, nil
}

// XAdd appends an entry with an automatic ID to stream when the term in ctx
// is not stale, and returns the entry's ID; see Run for the errors.
func (g *Guard) XAdd(ctx context.Context, stream string, fieldValues ...any) (string, error) {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return "", errors.New("redisfence: XAdd needs field-value pairs")
	}
	v, err := g.Run(ctx, xaddScript, []string{stream}, fieldValues...)
	if err != nil {
		return "", err
	}
	id, _ := v.(string)
	return id, nil
}

// Advance raises the election's fence to the term in ctx without writing
// anything else. A new leader calls it at the start of its term to refuse
// its predecessor's late writes at once, before its own first write.
func (g *Guard) Advance(ctx context.Context) error {
	_, err := g.Run(ctx, advanceScript, nil)
	return err
}

// mapErr turns the prelude's error replies into the fence errors and
// redacts the rest.
func (g *Guard) mapErr(tok fence.Token, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "FXFENCESTALE "); ok {
		stale := &fence.StaleTermError{Election: tok.Election, Term: tok.Term}
		if h, perr := strconv.ParseUint(strings.TrimSpace(rest), 10, 63); perr == nil {
			stale.Highest = h
		}
		return stale
	}
	if strings.HasPrefix(msg, "FXFENCEINVALID") {
		return fmt.Errorf("redisfence: fence key %q: %w", g.FenceKey(tok.Election), backendkit.ErrInvalidRecord)
	}
	return fmt.Errorf("redisfence: guarded write: %w", backendkit.RedactError(err))
}
