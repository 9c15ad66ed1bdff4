package caslease

import (
	"context"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// ByteStore is a compare-and-swap register of opaque bytes (memcached
// items, NATS KV entries, S3 objects): Register with the record encoded by
// Bytes. Its methods mean what Register's do, with value bytes for the
// record; a value may be anything (a foreign program's), and Bytes
// rejects what is not a record. Get should read at most
// backendkit.MaxValueBytes+1 bytes of a value: Bytes rejects a longer one
// unread.
type ByteStore interface {
	// Get returns key's value and its current version, or an error
	// matching ErrNotFound (with a tombstone's version, as for
	// Register.Get).
	Get(ctx context.Context, key string) (ByteEntry, error)
	// Add stores value under key only if key is absent; see Register.Add.
	Add(ctx context.Context, key string, value []byte, ttl time.Duration) (string, error)
	// CompareAndSwap replaces key's value only if its current version is
	// version; see Register.CompareAndSwap.
	CompareAndSwap(ctx context.Context, key string, value []byte, version string, ttl time.Duration) (string, error)
	// Capabilities describes the store; it must not do I/O.
	Capabilities() Capabilities
}

// ByteEntry is a value read from a ByteStore with its version.
type ByteEntry struct {
	// Value is the stored bytes.
	Value []byte
	// Version identifies this write of the key; never empty for a value.
	Version string
}

// ByteWatcher is the optional change-notification capability of a
// ByteStore (NATS KV Watch); see Watcher.
type ByteWatcher interface {
	// Watch calls change for every later write or delete of a key that
	// starts with prefix (value is nil for a delete), until ctx is done or
	// the watch breaks; otherwise as Watcher.Watch.
	Watch(ctx context.Context, prefix string, ready func(), change func(key string, value []byte)) error
}

// Bytes returns the Register that stores records in s as
// backendkit.MarshalValue encodes them (a JSON value with the record, the
// released flag and a per-write nonce, so that no two writes store the same
// bytes and a content-hash version such as an ETag changes on every
// write), decoding them with backendkit.UnmarshalValue. The Register
// implements Watcher if s implements ByteWatcher.
func Bytes(s ByteStore) Register {
	b := byteRegister{s: s}
	if w, ok := s.(ByteWatcher); ok {
		return watchingBytes{byteRegister: b, w: w}
	}
	return b
}

type byteRegister struct{ s ByteStore }

func (r byteRegister) Capabilities() Capabilities { return r.s.Capabilities() }

func (r byteRegister) Get(ctx context.Context, key, election string) (Entry, error) {
	e, err := r.s.Get(ctx, key)
	if err != nil {
		return Entry{Version: e.Version}, err
	}
	rec, err := backendkit.UnmarshalValue(e.Value, election)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Record: rec, Version: e.Version}, nil
}

func (r byteRegister) Add(ctx context.Context, key string, rec Record, ttl time.Duration) (string, error) {
	v, err := backendkit.MarshalValue(rec.Lease, rec.Released)
	if err != nil {
		return "", err
	}
	return r.s.Add(ctx, key, v, ttl)
}

func (r byteRegister) CompareAndSwap(ctx context.Context, key string, prev Entry, rec Record, ttl time.Duration) (string, error) {
	v, err := backendkit.MarshalValue(rec.Lease, rec.Released)
	if err != nil {
		return "", err
	}
	return r.s.CompareAndSwap(ctx, key, v, prev.Version, ttl)
}

type watchingBytes struct {
	byteRegister
	w ByteWatcher
}

func (r watchingBytes) Watch(ctx context.Context, prefix string, ready func(), change func(Change)) error {
	return r.w.Watch(ctx, prefix, ready, func(key string, value []byte) {
		if value == nil {
			change(Change{Key: key, Deleted: true})
			return
		}
		rec, err := backendkit.UnmarshalValue(value, "")
		change(Change{Key: key, Record: rec, Err: err})
	})
}
