package memcachedlease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

const (
	// maxExpiration is the longest relative expiration memcached accepts in
	// seconds (30 days); larger values are read as absolute Unix times.
	maxExpiration = 30 * 24 * 60 * 60
	// MaxLease is the longest lease duration the adapter accepts: rounded
	// up to whole seconds plus the one-second tick margin, it must stay a
	// relative expiration.
	MaxLease = (maxExpiration - 1) * time.Second
	// maxKeyLen is memcached's key length limit.
	maxKeyLen = 250
)

// Store adapts a *memcache.Client to cachelease.Store: add for
// add-if-absent, gets/cas for compare-and-swap, expiry in whole seconds by
// the server's clock. It is safe for concurrent use.
type Store struct {
	client *memcache.Client
}

var _ cachelease.Store = (*Store)(nil)

// NewStore returns a Store on client, which the caller owns.
func NewStore(client *memcache.Client) (*Store, error) {
	if client == nil {
		return nil, errors.New("memcachedlease: nil client")
	}
	return &Store{client: client}, nil
}

// capabilities are every Store's: server TTL, MaxLease, 250-byte keys.
var capabilities = cachelease.Capabilities{ServerTTL: true, MaxTTL: MaxLease, MaxKeyLen: maxKeyLen}

// Capabilities reports server TTL, MaxLease and memcached's 250-byte keys.
func (s *Store) Capabilities() cachelease.Capabilities { return capabilities }

// Expiration converts a lease duration into memcached's expiration in
// seconds: rounded up to whole seconds, plus one. memcached's clock ticks
// once a second, so an item stored with expiration n may expire after as
// little as n−1 seconds; the extra second keeps the key alive for at least
// the full lease. 0 stays 0 (no expiry). Durations that cannot be expressed
// as a relative expiration give an error matching cachelease.ErrTTLRange.
func Expiration(ttl time.Duration) (int32, error) {
	switch {
	case ttl == 0:
		return 0, nil
	case ttl < 0 || ttl > MaxLease:
		return 0, fmt.Errorf("%w: %v (memcached: up to %v)", cachelease.ErrTTLRange, ttl, MaxLease)
	}
	secs := (ttl + time.Second - 1) / time.Second
	return int32(secs) + 1, nil
}

// Get implements cachelease.Store with memcached "gets".
func (s *Store) Get(ctx context.Context, key string) (cachelease.Entry, error) {
	if err := ctx.Err(); err != nil {
		return cachelease.Entry{}, err
	}
	it, err := s.client.Get(key)
	if errors.Is(err, memcache.ErrCacheMiss) {
		return cachelease.Entry{}, cachelease.ErrNotFound
	}
	if err != nil {
		return cachelease.Entry{}, fmt.Errorf("memcached get: %w", err)
	}
	return cachelease.Entry{Value: it.Value, Version: strconv.FormatUint(it.CasID, 10)}, nil
}

// Add implements cachelease.Store with memcached "add", then reads the new
// CAS id with "gets" (the text protocol's add does not return it). If
// another write replaced the value in between, it reports
// cachelease.ErrConflict.
func (s *Store) Add(ctx context.Context, key string, value []byte, ttl time.Duration) (string, error) {
	exp, err := Expiration(ttl)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	err = s.client.Add(&memcache.Item{Key: key, Value: value, Expiration: exp})
	if errors.Is(err, memcache.ErrNotStored) {
		return "", cachelease.ErrExists
	}
	if err != nil {
		return "", fmt.Errorf("memcached add: %w", err)
	}
	return s.versionOf(ctx, key, value)
}

// CompareAndSwap implements cachelease.Store with memcached "cas", then
// reads the new CAS id with "gets".
func (s *Store) CompareAndSwap(ctx context.Context, key string, value []byte, version string, ttl time.Duration) (string, error) {
	exp, err := Expiration(ttl)
	if err != nil {
		return "", err
	}
	cas, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		return "", cachelease.ErrConflict // not a version this store gave out
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	err = s.client.CompareAndSwap(&memcache.Item{Key: key, Value: value, Expiration: exp, CasID: cas})
	switch {
	case errors.Is(err, memcache.ErrCASConflict), errors.Is(err, memcache.ErrNotStored), errors.Is(err, memcache.ErrCacheMiss):
		return "", cachelease.ErrConflict
	case err != nil:
		return "", fmt.Errorf("memcached cas: %w", err)
	}
	return s.versionOf(ctx, key, value)
}

// versionOf reads key's CAS id after this Store wrote value. Every value the
// Backend writes is unique (it carries a nonce), so equal bytes mean it is
// still our write.
func (s *Store) versionOf(ctx context.Context, key string, value []byte) (string, error) {
	e, err := s.Get(ctx, key)
	if errors.Is(err, cachelease.ErrNotFound) {
		return "", cachelease.ErrConflict
	}
	if err != nil {
		return "", err
	}
	if !bytes.Equal(e.Value, value) {
		return "", cachelease.ErrConflict
	}
	return e.Version, nil
}

// New returns a cachelease.Backend on client (which the caller owns) named
// "memcached". It does no I/O.
func New(client *memcache.Client, opts cachelease.Options) (*cachelease.Backend, error) {
	s, err := NewStore(client)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = "memcached"
	}
	return cachelease.New(s, opts)
}

// compile-time check that the Backend built here is an fxelection.Backend.
var _ fxelection.Backend = (*cachelease.Backend)(nil)
