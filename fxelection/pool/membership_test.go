package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// fast are the short timings of these tests (fake time).
var fast = pool.Config{Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}

func numbered(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}

func startPool(t *testing.T, cfg pool.Config, b fxelection.Backend) *pool.Pool {
	t.Helper()
	p, err := pool.New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return p
}

func withTimings(c pool.Config) pool.Config {
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = fast.LeaseDuration, fast.RenewDeadline, fast.RetryPeriod
	return c
}

// TestMismatchedShardListsLeaveNoShardUnowned: two workers of one pool in
// a rolling change of shard_count from 64 to 128 (one runs the old list,
// one the new) keep every shard of both lists owned, report the mismatch,
// and hand over nothing the other does not know.
func TestMismatchedShardListsLeaveNoShardUnowned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		old := startPool(t, withTimings(pool.Config{Name: "roll", Identity: "old", Shards: numbered(64)}), store)
		time.Sleep(2 * time.Second) // the old worker owns its 64
		upd := startPool(t, withTimings(pool.Config{Name: "roll", Identity: "new", Shards: numbered(128)}), store)
		// Over 40 RetryPeriods, past the first few: every shard owned at
		// every sample.
		unowned := map[string]int{}
		for i := range 200 {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if i < 40 {
				continue
			}
			owned := map[string]bool{}
			for _, p := range []*pool.Pool{old, upd} {
				for _, s := range p.Owned() {
					owned[s.Name] = true
				}
			}
			for _, s := range numbered(128) {
				if !owned[s] {
					unowned[s]++
				}
			}
		}
		if len(unowned) > 0 {
			t.Errorf("%d of 128 shards were without an owner at some sample after 4s (samples per shard: %v); old %+v, new %+v",
				len(unowned), unowned, old.Status(), upd.Status())
		}
		if so, sn := old.Status(), upd.Status(); so.Mismatched != 1 || sn.Mismatched != 1 {
			t.Errorf("Mismatched: old %d, new %d, want 1 each (the other member)", so.Mismatched, sn.Mismatched)
		}
	})
}

// TestMatchingListsReportNoMismatch: workers with one list report none.
func TestMatchingListsReportNoMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := startPool(t, withTimings(pool.Config{Name: "same", Identity: "a", Shards: numbered(8)}), store)
		b := startPool(t, withTimings(pool.Config{Name: "same", Identity: "b", Shards: numbered(8)}), store)
		time.Sleep(5 * time.Second)
		sa, sb := a.Status(), b.Status()
		if sa.Mismatched != 0 || sb.Mismatched != 0 || sa.Owned != 4 || sb.Owned != 4 {
			t.Fatalf("status a %+v, b %+v: want no mismatch and 4 shards each", sa, sb)
		}
	})
}

// dieAfterJoin is a backend that fails every call once its worker has
// claimed a member slot: a process that crashes right after joining.
type dieAfterJoin struct {
	fxelection.Backend
	dead atomic.Bool
}

var errDead = errors.New("store unreachable")

func isMemberSlot(election string) bool { return strings.Contains(election, "member/") }

func (b *dieAfterJoin) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if b.dead.Load() {
		return fxelection.Lease{}, errDead
	}
	l, err := b.Backend.Acquire(ctx, req)
	if err == nil && isMemberSlot(req.Election) {
		b.dead.Store(true)
	}
	return l, err
}

func (b *dieAfterJoin) Renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if b.dead.Load() {
		return fxelection.Lease{}, errDead
	}
	return b.Backend.Renew(ctx, l)
}

func (b *dieAfterJoin) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	if b.dead.Load() {
		return fxelection.Lease{}, errDead
	}
	return b.Backend.Get(ctx, election)
}

func (b *dieAfterJoin) Release(ctx context.Context, l fxelection.Lease) error {
	if b.dead.Load() {
		return errDead
	}
	return b.Backend.Release(ctx, l)
}

// TestJoinerThatDiesGetsNoShards: a worker whose store calls all fail
// right after it claimed its member slot is handed no shard (it could
// take none: each would be without an owner until its lease expired);
// the live worker keeps all of them throughout and reports it joining.
func TestJoinerThatDiesGetsNoShards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := startPool(t, withTimings(pool.Config{Name: "crash", Identity: "a", Shards: numbered(8)}), store)
		time.Sleep(2 * time.Second)
		if n := len(a.Owned()); n != 8 {
			t.Fatalf("the lone worker owns %d shards, want 8", n)
		}
		dying := &dieAfterJoin{Backend: store}
		p, err := pool.New(withTimings(pool.Config{Name: "crash", Identity: "b", Shards: numbered(8)}), dying)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = p.Stop(ctx) // its store is gone: errors expected
		}()
		sawJoining := false
		minOwned := 8
		// Until well past the dead worker's slot lease and a shard's lease.
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			minOwned = min(minOwned, len(a.Owned()))
			sawJoining = sawJoining || a.Status().Joining == 1
		}
		if !dying.dead.Load() {
			t.Fatal("the second worker never claimed a member slot")
		}
		if st := a.Status(); minOwned != 8 || st.Moves != 0 {
			t.Errorf("the live worker owned as few as %d of 8 shards and handed %d over to a worker that died on joining; want 8 throughout and none (status %+v)",
				minOwned, st.Moves, st)
		}
		if !sawJoining {
			t.Error("the live worker never reported the dead one as joining")
		}
	})
}

// floored is the in-memory backend with a minimum lease (as Azure Blob's
// 15s), refusing shorter durations as the store would; it records the
// member slots' durations asked for.
type floored struct {
	fxelection.Backend
	min time.Duration

	mu    sync.Mutex
	slots []time.Duration
}

func (b *floored) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if isMemberSlot(req.Election) {
		b.mu.Lock()
		b.slots = append(b.slots, req.Duration)
		b.mu.Unlock()
	}
	if req.Duration < b.min {
		return fxelection.Lease{}, fmt.Errorf("store: %w", backendkit.ErrDurationRange)
	}
	return b.Backend.Acquire(ctx, req)
}

type flooredReporting struct{ *floored }

func (b flooredReporting) MinLeaseDuration() time.Duration { return b.min }

// TestSlotLeaseAtLeastBackendMinimum: on a backend whose minimum lease is
// 15s, a pool with the default timings asks for member slots of 15s (not
// RenewDeadline's 10s) and two workers spread; a LeaseDuration below the
// minimum is refused by New, naming LeaseDuration.
func TestSlotLeaseAtLeastBackendMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		mk := func() fxelection.Backend { return flooredReporting{&floored{Backend: store, min: 15 * time.Second}} }
		_, err := pool.New(pool.Config{Name: "short", Shards: numbered(2), Timing: fxelection.Timing{LeaseDuration: 14 * time.Second, RenewDeadline: 10 * time.Second}}, mk())
		var ce *fxelection.ConfigError
		if !errors.As(err, &ce) || ce.Field != "LeaseDuration" {
			t.Errorf("New with LeaseDuration 14s on a backend whose minimum is 15s: %v, want a ConfigError naming LeaseDuration", err)
		}

		b1, b2 := mk(), mk()
		a := startPool(t, pool.Config{Name: "azure", Identity: "a", Shards: numbered(4)}, b1)
		b := startPool(t, pool.Config{Name: "azure", Identity: "b", Shards: numbered(4)}, b2)
		time.Sleep(30 * time.Second)
		sa, sb := a.Status(), b.Status()
		if sa.Owned != 2 || sb.Owned != 2 {
			t.Errorf("with default timings on a 15s-minimum backend: a %+v, b %+v, want 2 shards each", sa, sb)
		}
		f := b1.(flooredReporting).floored
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, d := range f.slots {
			if d < 15*time.Second {
				t.Fatalf("a member slot asked for %v, below the backend's 15s minimum", d)
			}
		}
	})
}

// recorder is a slog handler keeping the records' messages and errors.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	s := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	r.mu.Lock()
	r.msgs = append(r.msgs, s)
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// TestRefusedSlotDurationIsLoggedAndCounted: a backend that refuses the
// member slot's duration without reporting its minimum (a wrapper that
// does not forward it) is never silent: each refusal is counted in
// Status.SlotRefused and logged as an error.
func TestRefusedSlotDurationIsLoggedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := &floored{Backend: memory.New(), min: 15 * time.Second}
		p := startPool(t, pool.Config{Name: "silent", Shards: numbered(2), Timing: fxelection.Timing{LeaseDuration: 15 * time.Second}, Logger: slog.New(rec)}, b)
		time.Sleep(5 * time.Second)
		st := p.Status()
		if st.SlotRefused == 0 || st.SlotFailures < st.SlotRefused || st.Slot != -1 {
			t.Errorf("status %+v: want refused member slot acquisitions counted and no slot", st)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		logged := 0
		for _, m := range rec.msgs {
			if strings.HasPrefix(m, "ERROR pool: the store refused the member slot's lease duration") && strings.Contains(m, "RenewDeadline") {
				logged++
			}
		}
		if logged == 0 || uint64(logged) != st.SlotRefused && uint64(logged) != st.SlotRefused+1 {
			t.Errorf("%d refusals logged for %d counted (logs: %q)", logged, st.SlotRefused, rec.msgs)
		}
	})
}

// TestEveryShardNameValidated: New checks every shard's name, not only the
// longest, and names the shard's index, never its value.
func TestEveryShardNameValidated(t *testing.T) {
	for _, tc := range []struct {
		shards []string
		field  string
	}{
		{[]string{"a-long-and-valid-shard-name", "x\x01"}, "Shards[1]"},
		{[]string{"ok", "bad\xff", "a-long-and-valid-shard-name"}, "Shards[1]"},
		{[]string{"a", "b\u200b"}, "Shards[1]"}, // a format character
		{[]string{"a", "", "c"}, "Shards[1]"},
		{[]string{"a", "b", "a"}, "Shards[2]"},
		{[]string{"a", strings.Repeat("s", 190)}, "Shards[1]"}, // too long with the name
	} {
		cfg := pool.Config{Name: "valid", Shards: tc.shards}
		for _, err := range []error{cfg.Validate(), func() error { _, err := pool.New(cfg, memory.New()); return err }()} {
			var ce *fxelection.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("shards %q: %v, want a ConfigError naming %s", tc.shards, err, tc.field)
				continue
			}
			for _, s := range tc.shards {
				if len(s) > 1 && strings.Contains(err.Error(), s) {
					t.Errorf("shards %q: the error %q quotes a shard", tc.shards, err)
				}
			}
		}
	}
}
