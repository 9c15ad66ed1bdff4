// Package fencedcounter is the fenced store the lock feature cases
// (internal/featuretest's MutualExclusion) write through: a Counter whose
// every read and write carries a lock term, refused when a higher term was
// seen. Memory keeps it in the test process; Redis keeps it in Redis, each
// call one script behind package redisfence's check, so the store itself
// refuses a stale term; PostgreSQL's tests keep one on pgfence. Check
// checks that a Counter fences.
package fencedcounter

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

// KeyPrefix starts every key the counter writes: its data keys and
// redisfence's fence keys.
const KeyPrefix = "fxcounter:"

// Redis is a Counter in Redis. Each key's counter, the list of its
// accepted terms and its fence key share one Redis Cluster hash slot
// (redisfence.HashTag). It is safe for concurrent use and does not own the
// client.
type Redis struct {
	client redis.UniversalClient
	guard  *redisfence.Guard
}

var _ Counter = (*Redis)(nil)

// NewRedis returns a counter writing through client (a *redis.Client or a
// cluster client; set ContextTimeoutEnabled so calls honour deadlines).
func NewRedis(client redis.UniversalClient) *Redis {
	return &Redis{client: client, guard: redisfence.New(client, redisfence.Options{KeyPrefix: KeyPrefix})}
}

// PrivateRedis starts a redis-server of the test's own (internal/testserver:
// skipped when redis-server is missing, a failure under CI=true) and
// returns a counter on it; the server and the client close when the test
// ends. It fits featuretest.Options.Counter.
func PrivateRedis(t *testing.T) Counter {
	t.Helper()
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return NewRedis(c)
}

var (
	readScript  = redisfence.NewScript(`return redis.call('GET', KEYS[1])`)
	writeScript = redisfence.NewScript(`redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1`)
)

// keys returns the names of key's counter and of its list of accepted
// terms.
func keys(key string) (counter, accepted string) {
	tag := redisfence.HashTag(key)
	return KeyPrefix + tag + ":counter", KeyPrefix + tag + ":accepted"
}

// Read implements Counter.
func (r *Redis) Read(ctx context.Context, key string, term uint64) (uint64, error) {
	counter, _ := keys(key)
	v, err := r.guard.Run(fence.WithToken(ctx, fence.Token{Election: key, Term: term}), readScript, []string{counter})
	if err != nil || v == nil {
		return 0, err
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("fencedcounter: counter %s holds %T", counter, v)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fencedcounter: counter %s: %w", counter, err)
	}
	return n, nil
}

// Write implements Counter.
func (r *Redis) Write(ctx context.Context, key string, term, value uint64) error {
	counter, accepted := keys(key)
	_, err := r.guard.Run(fence.WithToken(ctx, fence.Token{Election: key, Term: term}), writeScript,
		[]string{counter, accepted}, strconv.FormatUint(value, 10), strconv.FormatUint(term, 10))
	return err
}

// Accepted implements Counter.
func (r *Redis) Accepted(ctx context.Context, key string) ([]uint64, error) {
	_, accepted := keys(key)
	all, err := r.client.LRange(ctx, accepted, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("fencedcounter: accepted terms: %w", err)
	}
	terms := make([]uint64, len(all))
	for i, s := range all {
		if terms[i], err = strconv.ParseUint(s, 10, 64); err != nil {
			return nil, fmt.Errorf("fencedcounter: accepted terms: %w", err)
		}
	}
	return terms, nil
}
