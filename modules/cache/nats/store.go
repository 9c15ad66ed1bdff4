package natslease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// DefaultBucket is the bucket a ConfigModule uses when Bucket is empty.
const DefaultBucket = "fxelection"

// ErrBucketRequired is returned for an empty or invalid bucket name.
var ErrBucketRequired = errors.New("natslease: a bucket name of A-Z a-z 0-9 _ - is required")

// Store adapts a NATS JetStream key-value bucket to cachelease.Store:
// Create for add-if-absent, Update with the last revision for
// compare-and-swap, Watch for push wake-up (cachelease.Watcher). The
// revision is the version. It uses observed-time expiry: nats-server 2.9
// has no per-key TTL, and a bucket-wide MaxAge cannot follow each lease's
// duration. It is safe for concurrent use.
type Store struct {
	nc  *nats.Conn               // the connection, if known: the watch restarts when it reconnects
	js  jetstream.JetStream      // nil for a Store on a given bucket
	cfg jetstream.KeyValueConfig // the bucket to create, with js

	mu      sync.Mutex
	kv      jetstream.KeyValue // nil until bound (js set)
	suspect bool               // an operation timed out: check the stream exists
}

var (
	_ cachelease.Store   = (*Store)(nil)
	_ cachelease.Watcher = (*Store)(nil)
)

// NewStore returns a Store on kv, a bucket the application created and
// owns. nc, if not nil, is the connection kv uses: the Store then
// re-establishes its watch as soon as nc reconnects (a KV watch does not
// survive a server restart by itself; without nc, push wake-up stays off
// after one and followers poll). If the bucket is deleted (or the server
// restarts without its store), every operation fails until the application
// re-creates it; use NewBucketStore for a Store that re-creates it.
func NewStore(kv jetstream.KeyValue, nc *nats.Conn) (*Store, error) {
	if kv == nil {
		return nil, errors.New("natslease: nil KeyValue")
	}
	return &Store{kv: kv, nc: nc}, nil
}

// NewBucketStore returns a Store that binds to the bucket cfg.Bucket through
// js on first use, creating it with cfg if it does not exist, and again
// whenever it has disappeared (deleted, or a server that restarted empty).
// It does no I/O.
func NewBucketStore(js jetstream.JetStream, cfg jetstream.KeyValueConfig) (*Store, error) {
	if js == nil {
		return nil, errors.New("natslease: nil JetStream")
	}
	if !ValidBucket(cfg.Bucket) {
		return nil, ErrBucketRequired
	}
	return &Store{js: js, nc: js.Conn(), cfg: cfg}, nil
}

// ValidBucket reports whether name is a valid bucket name.
func ValidBucket(name string) bool {
	if name == "" || len(name) > 200 {
		return false
	}
	for i := range len(name) {
		if !caslease.KeyChar(name[i]) { // A-Z a-z 0-9 _ -
			return false
		}
	}
	return true
}

// capabilities are every Store's: observed-time expiry, no key length limit.
var capabilities = cachelease.Capabilities{}

// Capabilities reports observed-time expiry and no key length limit.
func (s *Store) Capabilities() cachelease.Capabilities { return capabilities }

// bucket returns the bound bucket, binding (and creating) it if needed.
func (s *Store) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := s.js.KeyValue(ctx, s.cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = s.js.CreateKeyValue(ctx, s.cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = s.js.KeyValue(ctx, s.cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bind bucket: %w", err)
	}
	s.kv = kv
	return kv, nil
}

// unbind drops kv, the bucket bound, so that the next operation binds
// (and re-creates) it again; a bucket bound since is kept.
func (s *Store) unbind(kv jetstream.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == kv {
		s.kv = nil
	}
}

// gone reports whether err means the bucket's stream no longer exists.
func gone(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// do runs op on the bucket. For a Store that manages its bucket, an error
// saying the bucket is gone unbinds it and op is tried once more on a
// re-created bucket; an operation that timed out makes the next one check
// first that the bucket's stream still exists (a KV get on a stream that
// vanished with a server restarted empty gets no answer at all, not an
// error, so only a timeout shows it).
func (s *Store) do(ctx context.Context, op func(jetstream.KeyValue) error) error {
	if s.js != nil {
		s.mu.Lock()
		suspect, kv := s.suspect, s.kv
		s.mu.Unlock()
		if suspect && kv != nil {
			_, err := s.js.Stream(ctx, "KV_"+s.cfg.Bucket)
			if err == nil || gone(err) {
				s.mu.Lock()
				s.suspect = false
				s.mu.Unlock()
			}
			if gone(err) {
				s.unbind(kv)
			}
		}
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	err = op(kv)
	if err == nil || s.js == nil {
		return err
	}
	if !gone(err) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			s.mu.Lock()
			s.suspect = true
			s.mu.Unlock()
		}
		return err
	}
	s.unbind(kv)
	if kv, err = s.bucket(ctx); err != nil {
		return err
	}
	return op(kv)
}

// Get implements cachelease.Store. For a key whose last entry is a delete
// or purge marker it returns cachelease.ErrNotFound with the marker's
// revision as the Entry's Version (see cachelease.Store.Get), read from
// the key's history: a second round trip, made only for a missing key.
func (s *Store) Get(ctx context.Context, key string) (cachelease.Entry, error) {
	var e cachelease.Entry
	err := s.do(ctx, func(kv jetstream.KeyValue) error {
		ent, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			// kv.Get hides markers; the history shows the last one.
			var hist []jetstream.KeyValueEntry
			hist, err = kv.History(ctx, key, jetstream.MetaOnly())
			if err == nil {
				e.Version = tombstone(hist)
				err = jetstream.ErrKeyNotFound
			}
			return err
		}
		if err != nil {
			return err
		}
		e = cachelease.Entry{Value: ent.Value(), Version: strconv.FormatUint(ent.Revision(), 10)}
		return nil
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return cachelease.Entry{Version: e.Version}, cachelease.ErrNotFound
	}
	if err != nil {
		return cachelease.Entry{}, fmt.Errorf("nats kv get: %w", err)
	}
	return e, nil
}

// tombstone returns the revision of the last entry of hist if it is a
// delete or purge marker, else "" (a value written after the Get: the
// caller's write will then conflict and it reads again).
func tombstone(hist []jetstream.KeyValueEntry) string {
	if len(hist) == 0 {
		return ""
	}
	last := hist[len(hist)-1]
	if op := last.Operation(); op != jetstream.KeyValueDelete && op != jetstream.KeyValuePurge {
		return ""
	}
	return strconv.FormatUint(last.Revision(), 10)
}

// Add implements cachelease.Store with Update on revision 0: it succeeds
// only if the key has no entry at all, not even a delete marker (kv.Create
// would overwrite a marker, whichever it is; see cachelease.Store.Get).
// ttl is ignored: no per-key TTL.
func (s *Store) Add(ctx context.Context, key string, value []byte, _ time.Duration) (string, error) {
	return s.update(ctx, key, value, 0, cachelease.ErrExists, "create")
}

// CompareAndSwap implements cachelease.Store with Update on the last
// revision (ttl is ignored).
func (s *Store) CompareAndSwap(ctx context.Context, key string, value []byte, version string, _ time.Duration) (string, error) {
	last, err := strconv.ParseUint(version, 10, 64)
	if err != nil || last == 0 {
		return "", cachelease.ErrConflict // not a version this store gave out
	}
	return s.update(ctx, key, value, last, cachelease.ErrConflict, "update")
}

// update writes value to key if its last revision is last (0: no entry
// at all) and returns the new revision; one that lost to another write
// returns lost.
func (s *Store) update(ctx context.Context, key string, value []byte, last uint64, lost error, op string) (string, error) {
	var rev uint64
	err := s.do(ctx, func(kv jetstream.KeyValue) (err error) {
		rev, err = kv.Update(ctx, key, value, last)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return "", lost
	}
	if err != nil {
		return "", fmt.Errorf("nats kv %s: %w", op, err)
	}
	return strconv.FormatUint(rev, 10), nil
}

// Watch implements cachelease.Watcher with a KV watch (updates only) on
// prefix+">" when prefix ends with '.', else on every key. When the Store
// knows its connection, Watch returns when it reconnects, so that the
// Backend establishes a new watch (and wakes every subscriber, since a
// release may have been missed).
func (s *Store) Watch(ctx context.Context, prefix string, ready func(), change func(key string, value []byte)) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	pattern := jetstream.AllKeys
	if strings.HasSuffix(prefix, ".") {
		pattern = prefix + ">"
	}
	w, err := kv.Watch(ctx, pattern, jetstream.UpdatesOnly())
	if err != nil {
		if s.js != nil && gone(err) {
			s.unbind(kv)
		}
		return fmt.Errorf("nats kv watch: %w", err)
	}
	defer stopWatch(w)
	var reconnected chan nats.Status // nil: never ready
	if s.nc != nil {
		reconnected = s.nc.StatusChanged(nats.CONNECTED)
		defer s.nc.RemoveStatusListener(reconnected)
	}
	ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reconnected:
			return errors.New("nats kv watch: connection re-established")
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("nats kv watch: closed")
			}
			if e == nil {
				continue
			}
			switch e.Operation() {
			case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
				change(e.Key(), nil)
			default:
				change(e.Key(), e.Value())
			}
		}
	}
}

// stopWatch stops w and drains what its channel holds, so the client's
// delivery goroutine is not left blocked on a full channel (it sends with
// the watcher's lock held). The channel is not closed by Stop, so it does
// not wait for more.
func stopWatch(w jetstream.KeyWatcher) {
	_ = w.Stop()
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		default:
			return
		}
	}
}
