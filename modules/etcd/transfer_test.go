package etcdlease

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

// storedKV reads election's key through admin; nil when absent.
func storedKV(t *testing.T, admin *clientv3.Client, b *Backend, election string) *mvccpb.KeyValue {
	t.Helper()
	resp, err := admin.Get(ctxT(t), b.Key(election))
	if err != nil {
		t.Fatal(err)
	}
	return firstKV(resp.Kvs)
}

// leaseAlive reports whether the etcd lease of version (a Lease.Version)
// still exists.
func leaseAlive(t *testing.T, admin *clientv3.Client, version string) bool {
	t.Helper()
	id, ok := parseLeaseID(version)
	if !ok {
		t.Fatalf("version %q is not an etcd lease ID", version)
	}
	ttl, err := admin.TimeToLive(ctxT(t), clientv3.LeaseID(id))
	if err != nil {
		t.Fatal(err)
	}
	return !leaseGone(ttl)
}

// sameKV reports whether two reads of a key found the same write.
func sameKV(a, b *mvccpb.KeyValue) bool {
	return a != nil && b != nil && a.ModRevision == b.ModRevision && a.Lease == b.Lease && string(a.Value) == string(b.Value)
}

// TestTransfer: the successor's record replaces the caller's in one write
// with a term that is that write's revision (stated nowhere in the value),
// on an etcd lease of its own; the caller's etcd lease is revoked and the
// record survives that (and a later revocation or Release of the old
// lease); the successor renews it and Get reports it.
func TestTransfer(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	e := electiontesting.Election(t)
	la, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 30 * time.Second, Incarnation: backendkit.NewIncarnation()})
	if err != nil {
		t.Fatal(err)
	}
	req := backendkit.AcquireRequest{
		Election: e, Identity: "b", Duration: 20 * time.Second,
		Incarnation: backendkit.NewIncarnation(), Metadata: map[string]string{"from": "a"},
	}
	hint, err := b.Transfer(ctxT(t), la, req)
	if err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	kv := storedKV(t, admin, b, e)
	if kv == nil {
		t.Fatal("no key after Transfer")
	}
	if hint.Holder != "b" || hint.Incarnation != req.Incarnation || hint.Metadata["from"] != "a" || hint.Duration != req.Duration ||
		hint.Election != e || hint.Term <= la.Term || hint.Term != uint64(kv.ModRevision) ||
		hint.Version != formatLeaseID(kv.Lease) || hint.Version == la.Version || hint.ExpiresAt.IsZero() {
		t.Fatalf("Transfer returned %+v after %+v; key mod revision %d lease %x", hint, la, kv.ModRevision, kv.Lease)
	}
	var w map[string]any
	if err := json.Unmarshal(kv.Value, &w); err != nil {
		t.Fatal(err)
	}
	if _, ok := w["term"]; ok {
		t.Fatalf("the transferred record states a term: %s", kv.Value)
	}
	// The old etcd lease is revoked, and the record was not on it.
	if leaseAlive(t, admin, la.Version) {
		t.Error("the transferred lease's etcd lease is still alive")
	}
	if _, err := admin.Revoke(ctxT(t), clientv3.LeaseID(mustLeaseID(t, la.Version))); err == nil {
		t.Error("revoking the old etcd lease again succeeded: Transfer did not revoke it")
	}
	if err := b.Release(ctxT(t), la); err != nil {
		t.Fatalf("Release of the transferred lease: %v", err)
	}
	if got := storedKV(t, admin, b, e); !sameKV(got, kv) {
		t.Fatalf("the record changed after the old lease's revocation and Release: %+v, was %+v", got, kv)
	}
	got, err := newBackend(t, Options{}, c.Endpoints()...).Get(ctxT(t), e)
	if err != nil || !electiontesting.SameRecord(got, hint) {
		t.Fatalf("Get after Transfer = %+v, %v; want %+v", got, err, hint)
	}
	if _, err := b.Renew(ctxT(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew of the transferred lease: %v, want ErrLeaseLost", err)
	}
	if l, err := b.Renew(ctxT(t), hint); err != nil || l.Term != hint.Term {
		t.Fatalf("the successor's Renew of the transferred record: %+v, %v", l, err)
	}
	// The successor's own candidate, another incarnation, takes it at once
	// with a higher term.
	lb, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: 20 * time.Second, Incarnation: backendkit.NewIncarnation()})
	if err != nil || lb.Term <= hint.Term {
		t.Fatalf("b's Acquire of the transferred record: %+v, %v; want a term above %d", lb, err, hint.Term)
	}
}

func mustLeaseID(t *testing.T, version string) int64 {
	t.Helper()
	id, ok := parseLeaseID(version)
	if !ok {
		t.Fatalf("version %q is not an etcd lease ID", version)
	}
	return id
}

// TestTransferStale: a lease that is no longer the caller's transfers
// nothing (ErrLeaseLost) and leaves the key exactly as it was.
func TestTransferStale(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	to := func(e string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: "x", Duration: time.Minute}
	}
	acquire := func(t *testing.T, e, id string, d time.Duration) fxelection.Lease {
		t.Helper()
		l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: id, Duration: d, Incarnation: backendkit.NewIncarnation()})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	refused := func(t *testing.T, e string, l fxelection.Lease, req backendkit.AcquireRequest) {
		t.Helper()
		before := storedKV(t, admin, b, e)
		if _, err := b.Transfer(ctxT(t), l, req); !errors.Is(err, backendkit.ErrLeaseLost) {
			t.Fatalf("Transfer: %v, want ErrLeaseLost", err)
		}
		if after := storedKV(t, admin, b, e); before == nil && after != nil || before != nil && !sameKV(before, after) {
			t.Fatalf("a refused Transfer changed the key: %+v, was %+v", after, before)
		}
	}
	t.Run("ReacquiredByNewIncarnation", func(t *testing.T) {
		e := electiontesting.Election(t)
		old := acquire(t, e, "a", time.Minute)
		now := acquire(t, e, "a", time.Minute)
		if now.Version == old.Version || now.Term <= old.Term {
			t.Fatalf("re-acquire %+v after %+v", now, old)
		}
		refused(t, e, old, to(e))
		if l, err := b.Renew(ctxT(t), now); err != nil {
			t.Fatalf("the current lease's Renew after a refused Transfer: %+v, %v", l, err)
		}
	})
	t.Run("ExpiredAndTaken", func(t *testing.T) {
		e := electiontesting.Election(t)
		old := acquire(t, e, "a", time.Second)
		electiontesting.WaitFor(t, leaderLimit, "the lease to expire", func() bool {
			_, err := b.Get(ctxT(t), e)
			return errors.Is(err, backendkit.ErrNoLease)
		})
		refused(t, e, old, to(e)) // expired, nobody holds it
		if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("Get after a refused Transfer of an expired lease: %v, want ErrNoLease", err)
		}
		acquire(t, e, "c", time.Minute)
		refused(t, e, old, to(e))
	})
	t.Run("Forged", func(t *testing.T) {
		e := electiontesting.Election(t)
		l := acquire(t, e, "a", time.Minute)
		for name, f := range map[string]func(*fxelection.Lease){
			"other term":      func(l *fxelection.Lease) { l.Term++ },
			"other holder":    func(l *fxelection.Lease) { l.Holder = "z" },
			"other version":   func(l *fxelection.Lease) { l.Version = formatLeaseID(mustLeaseID(t, l.Version) + 1) },
			"foreign version": func(l *fxelection.Lease) { l.Version = "not-hex" },
			"no version":      func(l *fxelection.Lease) { l.Version = "" },
		} {
			forged := l
			f(&forged)
			t.Run(name, func(t *testing.T) { refused(t, e, forged, to(e)) })
		}
		t.Run("other election", func(t *testing.T) { refused(t, e, l, to(e+"-other")) })
		// A request Acquire would refuse is refused before anything is read.
		for name, req := range map[string]backendkit.AcquireRequest{
			"no identity":   {Election: e, Duration: time.Minute},
			"zero duration": {Election: e, Identity: "x"},
		} {
			before := storedKV(t, admin, b, e)
			if _, err := b.Transfer(ctxT(t), l, req); err == nil || errors.Is(err, backendkit.ErrLeaseLost) {
				t.Errorf("%s: Transfer: %v, want a request error", name, err)
			}
			if after := storedKV(t, admin, b, e); !sameKV(before, after) {
				t.Fatalf("%s: a refused Transfer changed the key", name)
			}
		}
		if got, err := b.Renew(ctxT(t), l); err != nil || got.Term != l.Term {
			t.Fatalf("Renew after the refused Transfers: %+v, %v", got, err)
		}
	})
}

// hookLease is a clientv3.Lease that runs granted after each Grant.
type hookLease struct {
	clientv3.Lease
	granted func(clientv3.LeaseID)
}

func (h *hookLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	g, err := h.Lease.Grant(ctx, ttl)
	if err == nil {
		h.granted(g.ID)
	}
	return g, err
}

// lostReplyKV is a clientv3.KV whose transactions are applied but report a
// failure, as when the reply is lost.
type lostReplyKV struct{ clientv3.KV }

func (k lostReplyKV) Txn(ctx context.Context) clientv3.Txn { return lostReplyTxn{k.KV.Txn(ctx)} }

type lostReplyTxn struct{ clientv3.Txn }

func (t lostReplyTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { return lostReplyTxn{t.Txn.If(cs...)} }
func (t lostReplyTxn) Then(ops ...clientv3.Op) clientv3.Txn { return lostReplyTxn{t.Txn.Then(ops...)} }
func (t lostReplyTxn) Else(ops ...clientv3.Op) clientv3.Txn { return lostReplyTxn{t.Txn.Else(ops...)} }
func (t lostReplyTxn) Commit() (*clientv3.TxnResponse, error) {
	if _, err := t.Txn.Commit(); err != nil {
		return nil, err
	}
	return nil, errors.New("reply lost")
}

// TestTransferFailedTxnRevokesGrant: when the transaction fails after the
// successor's etcd lease was granted, that lease is revoked. A holder
// re-acquiring between Transfer's read and its transaction fails the
// compare: ErrLeaseLost, the re-acquired record untouched. A transaction
// applied whose reply is lost: the revocation deletes the successor's
// record, so the election is free rather than held on a leaked lease.
func TestTransferFailedTxnRevokesGrant(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	t.Run("LostCompare", func(t *testing.T) {
		cl := etcdtest.NewClient(t, c.Endpoints()...)
		b := mustNew(t, cl, Options{})
		e := electiontesting.Election(t)
		req := backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()}
		la, err := b.Acquire(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		var grants []clientv3.LeaseID
		var again fxelection.Lease
		other := newBackend(t, Options{}, c.Endpoints()...)
		cl.Lease = &hookLease{Lease: cl.Lease, granted: func(id clientv3.LeaseID) {
			grants = append(grants, id)
			// Another run of a takes its record over in between.
			req.Incarnation = backendkit.NewIncarnation()
			var err error
			if again, err = other.Acquire(ctxT(t), req); err != nil {
				t.Error(err)
			}
		}}
		if _, err := b.Transfer(ctxT(t), la, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute}); !errors.Is(err, backendkit.ErrLeaseLost) {
			t.Fatalf("Transfer racing a re-acquire: %v, want ErrLeaseLost", err)
		}
		if len(grants) != 1 {
			t.Fatalf("%d grants, want 1", len(grants))
		}
		if leaseAlive(t, admin, formatLeaseID(int64(grants[0]))) {
			t.Error("the etcd lease granted for the failed Transfer is still alive")
		}
		if got, err := b.Get(ctxT(t), e); err != nil || !electiontesting.SameRecord(got, again) {
			t.Fatalf("Get after the failed Transfer = %+v, %v; want the re-acquired %+v", got, err, again)
		}
	})
	t.Run("LostReply", func(t *testing.T) {
		cl := etcdtest.NewClient(t, c.Endpoints()...)
		b := mustNew(t, cl, Options{})
		e := electiontesting.Election(t)
		la, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var grants []clientv3.LeaseID
		cl.Lease = &hookLease{Lease: cl.Lease, granted: func(id clientv3.LeaseID) { grants = append(grants, id) }}
		cl.KV = lostReplyKV{cl.KV}
		if _, err := b.Transfer(ctxT(t), la, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute}); err == nil || errors.Is(err, backendkit.ErrLeaseLost) {
			t.Fatalf("Transfer with a lost reply: %v, want a store error", err)
		}
		if len(grants) != 1 || leaseAlive(t, admin, formatLeaseID(int64(grants[0]))) {
			t.Fatalf("grants %v: the etcd lease granted for the failed Transfer is still alive", grants)
		}
		if got, err := newBackend(t, Options{}, c.Endpoints()...).Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("Get after the lost reply = %+v, %v; want ErrNoLease", got, err)
		}
	})
}

// TestTransferWakes: a Transfer wakes another Backend's subscribers of the
// election through the watch, although no key was deleted.
func TestTransferWakes(t *testing.T) {
	c := sharedCluster(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	e := electiontesting.Election(t)
	var woken atomic.Int32
	cancel := newBackend(t, Options{}, c.Endpoints()...).Subscribe(e, func() { woken.Add(1) })
	defer cancel()
	electiontesting.WaitFor(t, leaderLimit, "the watch to be established", func() bool { return woken.Load() > 0 })
	la, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()})
	if err != nil {
		t.Fatal(err)
	}
	// The acquisition of the absent key wakes no one (TestWakesFor), but
	// let its event pass before counting.
	time.Sleep(300 * time.Millisecond)
	w0 := woken.Load()
	if _, err := b.Transfer(ctxT(t), la, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute}); err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	electiontesting.WaitFor(t, electiontesting.Eventually, "a wake-up for the Transfer", func() bool { return woken.Load() > w0 })
}

// TestWakesFor: which watch events wake an election's subscribers: a
// deletion, and a put of a record without a term on a key that was live
// (Transfer, a new incarnation); not a put on an absent key, a put stating
// its term (a continued leadership) or a foreign value (a format 1 value
// among them).
func TestWakesFor(t *testing.T) {
	fresh, err := encodeRecord(fxelection.Lease{Holder: "b", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	continued, err := encodeRecord(fxelection.Lease{Holder: "b", Duration: time.Minute, Term: 42})
	if err != nil {
		t.Fatal(err)
	}
	put := func(value string, create, mod int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Value: []byte(value), CreateRevision: create, ModRevision: mod, Lease: 7}}
	}
	for name, c := range map[string]struct {
		ev   *clientv3.Event
		want bool
	}{
		"delete":                 {&clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{ModRevision: 50}}, true},
		"new leadership on live": {put(fresh, 42, 50), true},
		"acquire absent key":     {put(fresh, 50, 50), false},
		"continued leadership":   {put(continued, 42, 50), false},
		"format 1 value":         {put(`{"fxelection":1,"holder":"a","duration_ms":1000}`, 42, 50), false},
		"foreign value":          {put("\x00not a lease record", 42, 50), false},
	} {
		if got := wakesFor("e", c.ev); got != c.want {
			t.Errorf("%s: wakesFor = %v, want %v", name, got, c.want)
		}
	}
}
