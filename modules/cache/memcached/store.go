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

// capabilities are every Store's: server TTL in whole seconds (so a
// minimum of one), MaxLease, 250-byte keys.
var capabilities = cachelease.Capabilities{ServerTTL: true, MaxTTL: MaxLease, MinTTL: time.Second, MaxKeyLen: maxKeyLen}

// Capabilities reports server TTL (whole seconds, at least one), MaxLease
// and memcached's 250-byte keys.
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

// call runs f, a gomemcache call, so that the caller returns at ctx.Done
// even though gomemcache has no context support. f then goes on in a
// goroutine of its own until the client's Timeout ends it (gomemcache sets
// that deadline on the connection, so it cannot run longer than about the
// dial plus the read and write timeouts); its result is dropped. A write
// abandoned so may still be applied: the caller reports ctx's error, whose
// outcome is unknown. With a ctx that can never be done, f runs on the
// caller's goroutine.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned call never blocks
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Get implements cachelease.Store with memcached "gets". It returns at
// ctx.Done (see call).
func (s *Store) Get(ctx context.Context, key string) (cachelease.Entry, error) {
	it, err := call(ctx, func() (*memcache.Item, error) { return s.client.Get(key) })
	if errors.Is(err, memcache.ErrCacheMiss) {
		return cachelease.Entry{}, cachelease.ErrNotFound
	}
	if err != nil {
		return cachelease.Entry{}, fmt.Errorf("memcached get: %w", err)
	}
	return cachelease.Entry{Value: it.Value, Version: strconv.FormatUint(it.CasID, 10)}, nil
}

// Add implements cachelease.Store with memcached "add", then reads the new
// CAS id with "gets" (the text protocol's add does not return it). If that
// read does not find the bytes just written (another write replaced them,
// the key was deleted or evicted, or the read failed), it reports an error
// matching cachelease.ErrVersionUnknown: the add was made, its version is
// not known. It returns at ctx.Done (see call).
func (s *Store) Add(ctx context.Context, key string, value []byte, ttl time.Duration) (string, error) {
	exp, err := Expiration(ttl)
	if err != nil {
		return "", err
	}
	_, err = call(ctx, func() (struct{}, error) {
		return struct{}{}, s.client.Add(&memcache.Item{Key: key, Value: value, Expiration: exp})
	})
	if errors.Is(err, memcache.ErrNotStored) {
		return "", cachelease.ErrExists
	}
	if err != nil {
		return "", fmt.Errorf("memcached add: %w", err)
	}
	return s.versionOf(ctx, key, value)
}

// CompareAndSwap implements cachelease.Store with memcached "cas", then
// reads the new CAS id with "gets", with the same cachelease.ErrVersionUnknown
// rule as Add. It returns at ctx.Done (see call).
func (s *Store) CompareAndSwap(ctx context.Context, key string, value []byte, version string, ttl time.Duration) (string, error) {
	exp, err := Expiration(ttl)
	if err != nil {
		return "", err
	}
	cas, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		return "", cachelease.ErrConflict // not a version this store gave out
	}
	_, err = call(ctx, func() (struct{}, error) {
		return struct{}{}, s.client.CompareAndSwap(&memcache.Item{Key: key, Value: value, Expiration: exp, CasID: cas})
	})
	switch {
	case errors.Is(err, memcache.ErrCASConflict), errors.Is(err, memcache.ErrNotStored), errors.Is(err, memcache.ErrCacheMiss):
		return "", cachelease.ErrConflict
	case err != nil:
		return "", fmt.Errorf("memcached cas: %w", err)
	}
	return s.versionOf(ctx, key, value)
}

// versionOf reads key's CAS id after this Store wrote value. Every value the
// Backend writes is unique (it carries a nonce), and memcached changes an
// item's CAS id on every write of it, so a read that finds these bytes
// returns exactly the version this write produced. Anything else — other
// bytes, no key, a failed or abandoned read — means the write was made but
// its version is unknown: cachelease.ErrVersionUnknown, never ErrConflict
// (which says nothing was written).
func (s *Store) versionOf(ctx context.Context, key string, value []byte) (string, error) {
	e, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, cachelease.ErrNotFound):
		return "", fmt.Errorf("%w: the key was gone when read back", cachelease.ErrVersionUnknown)
	case err != nil:
		return "", fmt.Errorf("%w: read back: %w", cachelease.ErrVersionUnknown, err)
	case !bytes.Equal(e.Value, value):
		return "", fmt.Errorf("%w: replaced by another write before it was read back", cachelease.ErrVersionUnknown)
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
