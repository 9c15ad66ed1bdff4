package pglease_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// listeners counts the connections of app that sit in LISTEN.
func listeners(t *testing.T, adm *pgxpool.Pool, app string) int {
	t.Helper()
	var n int
	if err := adm.QueryRow(ctxT(t), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN %'`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPushWakeUp(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	follower, app := newBackend(t, d, "push-f", pglease.Options{})
	leader, _ := newBackend(t, d, "push-l", pglease.Options{})
	e, other := election(t), election(t)+"-other"

	var woken, wokenOther atomic.Int64
	cancel := follower.Subscribe(e, func() { woken.Add(1) })
	cancel2 := follower.Subscribe(e, func() {})
	cancelOther := follower.Subscribe(other, func() { wokenOther.Add(1) })
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listener", func() bool { return listeners(t, adm, app) == 1 })
	// Once listening, the listener wakes every subscriber once: a release
	// may have come before it listened.
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up after LISTEN", func() bool { return woken.Load() == 1 && wokenOther.Load() == 1 })
	woken.Store(0)
	wokenOther.Store(0)

	req := backendkit.AcquireRequest{Election: e, Identity: "l", Duration: time.Minute}
	l, err := leader.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up", func() bool { return woken.Load() == 1 })
	// Releasing it again is a no-op.
	if err := leader.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}

	// Still one connection for all subscriptions; cancelling some keeps it.
	if n := listeners(t, adm, app); n != 1 {
		t.Fatalf("%d listening connections, want 1", n)
	}
	cancel2()
	cancelOther()
	cancelOther() // idempotent
	if wokenOther.Load() != 0 {
		t.Fatalf("subscriber of another election woken %d times", wokenOther.Load())
	}

	// After the last cancel returns, no wake call and no connection.
	cancel()
	before := woken.Load()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listening connection to end", func() bool { return listeners(t, adm, app) == 0 })
	l, err = leader.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	// Resubscribing starts a new listener; use its wake-up as the barrier
	// after which the old one would have been delivered.
	var again atomic.Int64
	cancel3 := follower.Subscribe(e, func() { again.Add(1) })
	defer cancel3()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the new listener", func() bool { return listeners(t, adm, app) == 1 })
	l, err = leader.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the wake-up after resubscribing", func() bool { return again.Load() >= 1 })
	if woken.Load() != before {
		t.Fatalf("wake called %d times after cancel returned", woken.Load()-before)
	}
}

func TestPushDisabled(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	b, app := newBackend(t, d, "nopush", pglease.Options{DisablePush: true})
	cancel := b.Subscribe("x", func() { t.Error("woken with push disabled") })
	defer cancel()
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "x", Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a wake-up, if any, would arrive meanwhile
	if n := listeners(t, adm, app); n != 0 {
		t.Fatalf("%d listening connections with push disabled", n)
	}
}

// TestListenerReconnects kills the listening connection: the listener
// comes back, wakes its subscribers once for what it may have missed, and
// delivers later releases again.
func TestListenerReconnects(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	follower, app := newBackend(t, d, "reconnect", pglease.Options{})
	leader, _ := newBackend(t, d, "reconnect-l", pglease.Options{})
	e := election(t)
	var woken atomic.Int64
	cancel := follower.Subscribe(e, func() { woken.Add(1) })
	defer cancel()
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listener", func() bool { return listeners(t, adm, app) == 1 })

	for round := range 3 {
		var killed int
		if err := adm.QueryRow(ctxT(t), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND query LIKE 'LISTEN %'`, app).Scan(&killed); err != nil || killed != 1 {
			t.Fatalf("round %d: terminated %d listeners, %v", round, killed, err)
		}
		before := woken.Load()
		electiontesting.WaitFor(t, electiontesting.Eventually, "the catch-up wake-up after reconnecting", func() bool { return woken.Load() > before })
		electiontesting.WaitFor(t, electiontesting.Eventually, "the listener back", func() bool { return listeners(t, adm, app) == 1 })
		before = woken.Load()
		l, err := leader.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "l", Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := leader.Release(ctxT(t), l); err != nil {
			t.Fatal(err)
		}
		electiontesting.WaitFor(t, electiontesting.Eventually, "a wake-up after reconnecting", func() bool { return woken.Load() > before })
	}
}

// TestCloseStopsListener: Close ends the listener while subscriptions are
// open; their cancel still works afterwards, and Subscribe is a no-op.
func TestCloseStopsListener(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	b, app := newBackend(t, d, "close", pglease.Options{})
	cancel := b.Subscribe("x", func() {})
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listener", func() bool { return listeners(t, adm, app) == 1 })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the listening connection to end", func() bool { return listeners(t, adm, app) == 0 })
	cancel()
	b.Subscribe("y", func() {})()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
