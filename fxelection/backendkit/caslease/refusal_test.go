package caslease_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// errStoreRefused is a store adapter's own sentinel for a refused watch:
// it wraps caslease.ErrWatchRefused.
var errStoreRefused = fmt.Errorf("fake: no watch allowed (%w)", caslease.ErrWatchRefused)

// scriptedWatch is a fakeStore whose watch attempts do what the test
// sends on next: "refuse" (fail with errStoreRefused), "break" (be in
// place, then break).
type scriptedWatch struct {
	*fakeStore
	next chan string
}

func (s scriptedWatch) Watch(ctx context.Context, _ string, ready func(), _ func(string, []byte)) error {
	select {
	case <-ctx.Done():
		return nil
	case what := <-s.next:
		if what == "refuse" {
			return fmt.Errorf("%w: forbidden", errStoreRefused)
		}
		ready()
		return errors.New("watch broke")
	}
}

// lockedBuffer is a log destination safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestWatchRefusedReportedOnce: a watch the store refuses is logged once
// while it stays refused, and returned once, by the first Acquire that
// would have reported a held lease (never the holder's); after a watch
// that worked, the next refusal is reported again. Fake time.
func TestWatchRefusedReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scriptedWatch{fakeStore: &fakeStore{}, next: make(chan string)}
		logs := &lockedBuffer{}
		b, err := caslease.NewNotifying(caslease.Bytes(s), caslease.Options{
			Name:   "fake",
			Key:    func(e string) string { return caslease.EscapedKey(testPrefix, e, 0) },
			Prefix: testPrefix,
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ctx := context.Background()
		mustAcquire(t, b, req("a", "", time.Minute))
		cancel := b.Subscribe(election, func() {})
		defer cancel()
		follower := func() error {
			_, err := b.Acquire(ctx, req("b", "", time.Minute))
			return err
		}
		wantRefused := func() {
			t.Helper()
			err := follower()
			if !errors.Is(err, errStoreRefused) || !errors.Is(err, caslease.ErrWatchRefused) ||
				!strings.HasPrefix(err.Error(), "acquire lease: ") || !strings.Contains(err.Error(), "forbidden") {
				t.Fatalf("follower's Acquire: %v, want the refused watch", err)
			}
		}
		wantLogs := func(warn, info int) {
			t.Helper()
			synctest.Wait()
			if w, i := logs.count("level=WARN"), logs.count("level=INFO"); w != warn || i != info ||
				logs.count("watch refused") != warn || logs.count("forbidden") != warn {
				t.Fatalf("logged %d warnings and %d notices, want %d and %d", w, i, warn, info)
			}
		}

		s.next <- "refuse"
		wantLogs(1, 0)
		mustAcquire(t, b, req("a", "", time.Minute)) // the holder is not told
		wantRefused()
		wantHeld(t, follower(), "a")
		s.next <- "refuse" // still refused: not reported again
		wantLogs(1, 0)
		wantHeld(t, follower(), "a")
		s.next <- "break" // a watch that worked ends the refusal
		wantLogs(1, 1)
		wantHeld(t, follower(), "a")
		s.next <- "refuse"
		wantLogs(2, 1)
		wantRefused()
		wantHeld(t, follower(), "a")
	})
}

// blockingGets is a fakeStore whose Gets wait for the test: started
// reports each Get that began, proceed lets one finish.
type blockingGets struct {
	*fakeStore
	started, proceed chan struct{}
}

func (s blockingGets) Get(ctx context.Context, key string) (caslease.ByteEntry, error) {
	s.started <- struct{}{}
	<-s.proceed
	return s.fakeStore.Get(ctx, key)
}

// TestMaxInFlight: with MaxInFlight 1, a second store call waits for the
// first to end, and gives up with its context. Fake time.
func TestMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blockingGets{fakeStore: &fakeStore{}, started: make(chan struct{}, 4), proceed: make(chan struct{})}
		b, err := caslease.New(caslease.Bytes(s), caslease.Options{
			Name: "fake", Key: func(e string) string { return caslease.EscapedKey(testPrefix, e, 0) }, MaxInFlight: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		for range 2 {
			go func() { _, err := b.Get(context.Background(), election); done <- err }()
		}
		synctest.Wait()
		if len(s.started) != 1 {
			t.Fatalf("%d store calls in flight, want 1", len(s.started))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := b.Get(ctx, election); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get waiting for a slot: %v, want its context's error", err)
		}
		<-s.started
		s.proceed <- struct{}{}
		<-s.started // the second begins once the first ended
		s.proceed <- struct{}{}
		for range 2 {
			if err := <-done; !errors.Is(err, backendkit.ErrNoLease) {
				t.Fatalf("Get: %v, want ErrNoLease", err)
			}
		}
	})
}
