package natslease

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestTransferRefusals: a Transfer of a lease that is no longer the
// caller's — another incarnation's or term's, a request for another
// election, an invalid request, a compare-and-swap that loses to the
// holder's own renewal made in between, a lease at MaxTerm — writes
// nothing and leaves the record as it was; a lease whose version is stale
// but whose leadership is the caller's transfers, as Release matches it.
func TestTransferRefusals(t *testing.T) {
	srv, admin := newServer(t)
	nc := connect(t, srv.URL())
	kv, err := jsOf(t, nc).KeyValue(ctxT(t), testBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStore(kv, nc)
	if err != nil {
		t.Fatal(err)
	}
	hs := &heldStore{Store: st} // not armed: writes go through
	a, err := cachelease.New(hs, cachelease.Options{DisablePush: true})
	if err != nil {
		t.Fatal(err)
	}
	other := newBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
	ctx := ctxT(t)
	e := electionName(t)
	hint := func(e string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute, Metadata: map[string]string{"from": "a"}}
	}
	// unchanged fails t unless the store still holds exactly want.
	unchanged := func(what string, want backendkit.Lease) {
		t.Helper()
		got, err := other.Get(ctx, e)
		if err != nil || got.Holder != want.Holder || got.Term != want.Term || got.Incarnation != want.Incarnation || got.Version != want.Version {
			t.Fatalf("after %s the store holds %+v (%v), want %+v unchanged", what, got, err, want)
		}
	}

	l1, err := a.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Invalid requests, and a request for another election.
	for what, req := range map[string]backendkit.AcquireRequest{
		"no identity":       {Election: e, Duration: time.Minute},
		"no duration":       {Election: e, Identity: "b"},
		"another election":  hint(e + "-other"),
		"a bad incarnation": {Election: e, Identity: "b", Duration: time.Minute, Incarnation: "not one!"},
	} {
		_, err := a.Transfer(ctx, l1, req)
		if err == nil {
			t.Fatalf("Transfer with %s: no error", what)
		}
		if what == "another election" && !errors.Is(err, backendkit.ErrLeaseLost) {
			t.Fatalf("Transfer with a request for another election: %v, want ErrLeaseLost", err)
		}
		unchanged("a Transfer with "+what, l1)
	}

	// The holder re-acquired under another incarnation (a new term): the
	// earlier incarnation's lease transfers nothing.
	l2, err := a.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Transfer(ctx, l1, hint(e)); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of an earlier incarnation's lease: %v, want ErrLeaseLost", err)
	}
	unchanged("a Transfer of an earlier incarnation's lease", l2)
	// The same term under another incarnation is not the caller's either.
	stranger := l2
	stranger.Incarnation = backendkit.NewIncarnation()
	if _, err := a.Transfer(ctx, stranger, hint(e)); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of another incarnation's lease of the same term: %v, want ErrLeaseLost", err)
	}
	unchanged("a Transfer of another incarnation's lease", l2)

	// The holder's renewal lands between Transfer's read and its
	// compare-and-swap: the write loses and nothing changes.
	hs.arrived, hs.release = make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Transfer(ctx, l2, hint(e))
		done <- err
	}()
	<-hs.arrived // Transfer read the record; its write is held
	l3, err := other.Renew(ctx, l2)
	if err != nil {
		t.Fatal(err)
	}
	close(hs.release)
	if err := <-done; !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer whose compare-and-swap lost to a renewal: %v, want ErrLeaseLost", err)
	}
	hs.arrived = nil
	unchanged("a Transfer that lost its compare-and-swap", l3)

	// l2 is the leadership l3 renewed, with a stale version: it is the
	// caller's lease as Release matches it (holder, incarnation and term),
	// so it transfers, with a compare-and-swap on the version read.
	got, err := a.Transfer(ctx, l2, hint(e))
	if err != nil {
		t.Fatalf("Transfer of the holder's lease with a stale version: %v", err)
	}
	if got.Holder != "b" || got.Term <= l3.Term || got.Incarnation != "" || got.Metadata["from"] != "a" || got.Duration != time.Minute {
		t.Fatalf("Transfer returned %+v after term %d, want b's hint with a higher term", got, l3.Term)
	}
	if since := time.Since(got.AcquiredAt); since < 0 || since > time.Minute {
		t.Fatalf("the hint was acquired at %v, want now", got.AcquiredAt)
	}
	unchanged("a Transfer", got)

	// A lease at MaxTerm: no higher term exists, so nothing changes.
	top := got.Clone()
	top.Holder, top.Term, top.Version = "a", backendkit.MaxTerm, ""
	v, err := backendkit.MarshalValue(top, false)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := admin.Put(ctx, a.Key(e), v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Transfer(ctx, top, hint(e)); !errors.Is(err, backendkit.ErrTermExhausted) {
		t.Fatalf("Transfer at MaxTerm: %v, want ErrTermExhausted", err)
	}
	top.Version = strconv.FormatUint(rev, 10)
	unchanged("a Transfer at MaxTerm", top)
}

// TestTransferWakesSubscriber: the KV watch wakes another Backend's
// subscriber when a Transfer hands the lease over, although the lease is
// never free, and not when the holder renews.
func TestTransferWakesSubscriber(t *testing.T) {
	srv, _ := newServer(t)
	leader := newBackend(t, srv.URL(), cachelease.Options{})
	follower := newBackend(t, srv.URL(), cachelease.Options{})
	ctx := ctxT(t)
	e := electionName(t)
	var woken atomic.Int32
	t.Cleanup(follower.Subscribe(e, func() { woken.Add(1) }))
	electiontesting.WaitFor(t, electiontesting.Eventually, "the watch", func() bool { return woken.Load() > 0 })

	l, err := leader.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = leader.Renew(ctx, l); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the watch sees both writes
	woken.Store(0)
	for range 3 {
		if l, err = leader.Renew(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := woken.Load(); n != 0 {
		t.Fatalf("renewals woke the subscriber %d times, want none", n)
	}
	hint, err := leader.Transfer(ctx, l, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "the Transfer's wake-up", func() bool { return woken.Load() > 0 })
	got, err := follower.Get(ctx, e)
	if err != nil || got.Holder != "b" || got.Term != hint.Term {
		t.Fatalf("the woken follower reads %+v (%v), want b's hint of term %d", got, err, hint.Term)
	}
}
