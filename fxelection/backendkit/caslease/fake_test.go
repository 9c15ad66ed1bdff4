package caslease_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// fakeStore is an in-memory caslease.ByteStore (and ByteWatcher) the tests
// control: versions are a revision counter that Recreate starts again from
// 1 (as a re-created NATS bucket does), deletes leave tombstones when
// tombstones is set (NATS KV's markers), entries written with a ttl
// expire on server time when caps.ServerTTL is set, and hooks delay
// writes or lose their responses.
type fakeStore struct {
	caps       caslease.Capabilities
	tombstones bool

	// before, if set, runs before a write is applied (outside every lock):
	// it may block (a write delayed in flight) or write itself.
	before func(op, key string, value []byte)
	// after, if set, runs once a write was applied; a non-nil error
	// replaces the write's result (a response the client never got).
	after func(op, key string, err error) error

	deliver sync.Mutex // orders watch deliveries as the writes happened
	mu      sync.Mutex
	rev     uint64
	keys    map[string]*fakeEntry
	nextW   int
	watch   map[int]func(key string, value []byte)
	writes  int
}

type fakeEntry struct {
	value   []byte // nil: a tombstone
	version string
	expires time.Time // zero: never
}

var _ caslease.ByteWatcher = (*fakeStore)(nil)

func (s *fakeStore) Capabilities() caslease.Capabilities { return s.caps }

// live returns key's entry, nil when absent or expired; tomb is the
// tombstone's version when the key holds one. s.mu is held.
func (s *fakeStore) live(key string) (e *fakeEntry, tomb string) {
	e = s.keys[key]
	if e != nil && !e.expires.IsZero() && !time.Now().Before(e.expires) {
		delete(s.keys, key)
		e = nil
	}
	if e != nil && e.value == nil {
		return nil, e.version
	}
	return e, ""
}

func (s *fakeStore) Get(ctx context.Context, key string) (caslease.ByteEntry, error) {
	if err := ctx.Err(); err != nil {
		return caslease.ByteEntry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, tomb := s.live(key)
	if e == nil {
		return caslease.ByteEntry{Version: tomb}, caslease.ErrNotFound
	}
	return caslease.ByteEntry{Value: append([]byte(nil), e.value...), Version: e.version}, nil
}

func (s *fakeStore) Add(ctx context.Context, key string, value []byte, ttl time.Duration) (string, error) {
	return s.write(ctx, "add", key, value, ttl, func(cur *fakeEntry, tomb string) error {
		if cur != nil || tomb != "" {
			return caslease.ErrExists
		}
		return nil
	})
}

func (s *fakeStore) CompareAndSwap(ctx context.Context, key string, value []byte, version string, ttl time.Duration) (string, error) {
	return s.write(ctx, "cas", key, value, ttl, func(cur *fakeEntry, tomb string) error {
		if cur != nil && cur.version == version || cur == nil && tomb != "" && tomb == version {
			return nil
		}
		return caslease.ErrConflict
	})
}

// Put writes value under key unconditionally (a foreign program, an
// operator, a restore).
func (s *fakeStore) Put(key string, value []byte) string {
	v, _ := s.write(context.Background(), "put", key, value, 0, func(*fakeEntry, string) error { return nil })
	return v
}

// Delete deletes key (a tombstone when the store keeps them).
func (s *fakeStore) Delete(key string) {
	s.deliver.Lock()
	defer s.deliver.Unlock()
	s.mu.Lock()
	if s.tombstones {
		s.rev++
		s.keys[key] = &fakeEntry{version: strconv.FormatUint(s.rev, 10)}
	} else {
		delete(s.keys, key)
	}
	ws := s.watchers()
	s.mu.Unlock()
	for _, w := range ws {
		w(key, nil)
	}
}

// Recreate drops every key and starts the versions again from 1.
func (s *fakeStore) Recreate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.rev = map[string]*fakeEntry{}, 0
}

// Writes returns how many writes were applied.
func (s *fakeStore) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func (s *fakeStore) watchers() []func(string, []byte) {
	ws := make([]func(string, []byte), 0, len(s.watch))
	for _, w := range s.watch {
		ws = append(ws, w)
	}
	return ws
}

func (s *fakeStore) write(ctx context.Context, op, key string, value []byte, ttl time.Duration, cond func(*fakeEntry, string) error) (string, error) {
	if s.before != nil && op != "put" {
		s.before(op, key, value)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.deliver.Lock()
	defer s.deliver.Unlock()
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]*fakeEntry{}
	}
	cur, tomb := s.live(key)
	if err := cond(cur, tomb); err != nil {
		s.mu.Unlock()
		return "", err
	}
	s.rev++
	e := &fakeEntry{value: append([]byte(nil), value...), version: strconv.FormatUint(s.rev, 10)}
	if ttl > 0 && s.caps.ServerTTL {
		e.expires = time.Now().Add(ttl)
	}
	s.keys[key] = e
	s.writes++
	ws := s.watchers()
	s.mu.Unlock()
	for _, w := range ws {
		w(key, value)
	}
	var err error
	if s.after != nil && op != "put" {
		err = s.after(op, key, nil)
	}
	if err != nil {
		return "", err
	}
	return e.version, nil
}

// Watch delivers every later write and delete under prefix until ctx is
// done.
func (s *fakeStore) Watch(ctx context.Context, prefix string, ready func(), change func(key string, value []byte)) error {
	s.mu.Lock()
	if s.watch == nil {
		s.watch = map[int]func(string, []byte){}
	}
	id := s.nextW
	s.nextW++
	s.watch[id] = func(key string, value []byte) {
		if strings.HasPrefix(key, prefix) {
			change(key, value)
		}
	}
	s.mu.Unlock()
	ready()
	<-ctx.Done()
	s.mu.Lock()
	delete(s.watch, id)
	s.mu.Unlock()
	return nil
}

// watchless hides a fakeStore's Watch: followers poll.
type watchless struct{ *fakeStore }

func (w watchless) Watch() {} // not a ByteWatcher's Watch

const testPrefix = "fx."

// newBackend returns a Backend on s named "fake" with keys under
// testPrefix.
func newBackend(s caslease.ByteStore, secrets ...string) *caslease.NotifyingBackend {
	b, err := caslease.NewNotifying(caslease.Bytes(s), caslease.Options{
		Name:       "fake",
		Key:        func(e string) string { return caslease.EscapedKey(testPrefix, e, 0) },
		Prefix:     testPrefix,
		ElectionOf: func(k string) (string, bool) { return caslease.EscapedElection(testPrefix, k) },
		Secrets:    secrets,
	})
	if err != nil {
		panic(err)
	}
	return b
}
