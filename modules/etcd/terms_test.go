package etcdlease

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// TestTermIsAcquiringRevision: the term is the revision of the write that
// started the leadership (for a new key, its create revision); renewals
// and a re-acquire by the same incarnation keep it although the key's mod
// revision and etcd lease change, and the value then states it. A new
// incarnation of the same identity gets the revision of its own write.
func TestTermIsAcquiringRevision(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	e := electiontesting.Election(t)
	req := backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 30 * time.Second, Incarnation: backendkit.NewIncarnation()}
	l, err := b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	kv := func() (create, mod, lease int64) {
		resp, err := admin.Get(ctxT(t), b.Key(e))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get key: %v, %v", resp, err)
		}
		return resp.Kvs[0].CreateRevision, resp.Kvs[0].ModRevision, resp.Kvs[0].Lease
	}
	create, mod, lease := kv()
	if uint64(create) != l.Term || mod != create || formatLeaseID(lease) != l.Version || l.Incarnation != req.Incarnation {
		t.Fatalf("term %d version %s incarnation %q, key create revision %d mod %d lease %x", l.Term, l.Version, l.Incarnation, create, mod, lease)
	}
	if l, err = b.Renew(ctxT(t), l); err != nil || l.Term != uint64(create) {
		t.Fatalf("Renew: %+v, %v", l, err)
	}
	again, err := newBackend(t, Options{}, c.Endpoints()...).Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	create2, mod2, lease2 := kv()
	if again.Term != l.Term || create2 != create || mod2 <= create || lease2 == lease || again.Version != formatLeaseID(lease2) {
		t.Fatalf("re-acquire: term %d (was %d), create %d mod %d lease %x (was %x)", again.Term, l.Term, create2, mod2, lease2, lease)
	}
	// The first etcd lease no longer holds the key: renewing it loses.
	if _, err := b.Renew(ctxT(t), l); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew on the replaced etcd lease: %v, want ErrLeaseLost", err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Term != l.Term || got.Incarnation != req.Incarnation {
		t.Fatalf("Get after the re-acquire: %+v, %v; want term %d", got, err, l.Term)
	}
	// A new incarnation: the same key, the revision of its write.
	req.Incarnation = backendkit.NewIncarnation()
	next, err := b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	create3, mod3, _ := kv()
	if next.Term != uint64(mod3) || create3 != create || mod3 <= mod2 {
		t.Fatalf("new incarnation: term %d, key create %d mod %d (was %d)", next.Term, create3, mod3, mod2)
	}
	if _, err := b.Renew(ctxT(t), again); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("predecessor's Renew: %v, want ErrLeaseLost", err)
	}
	if l, err := b.Renew(ctxT(t), next); err != nil || l.Term != next.Term {
		t.Fatalf("new incarnation's Renew: %+v, %v", l, err)
	}
}

// TestRenewLongerDuration: a Renew asking for a longer duration than the
// etcd lease's TTL moves the key to a new etcd lease of that TTL (same
// term, old etcd lease revoked); a shorter one keeps the longer TTL.
func TestRenewLongerDuration(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	e := electiontesting.Election(t)
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := parseLeaseID(l.Version)
	l.Duration = 40 * time.Second
	l2, err := b.Renew(ctxT(t), l)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Term != l.Term || l2.Version == l.Version {
		t.Fatalf("renewed %+v from %+v: want the same term on a new etcd lease", l2, l)
	}
	id, _ := parseLeaseID(l2.Version)
	ttl, err := admin.TimeToLive(ctxT(t), clientv3.LeaseID(id))
	if err != nil || ttl.GrantedTTL != 40 {
		t.Fatalf("new etcd lease: %+v, %v; want a granted TTL of 40s", ttl, err)
	}
	if gone, err := admin.TimeToLive(ctxT(t), clientv3.LeaseID(old)); err != nil || gone.TTL != -1 {
		t.Fatalf("old etcd lease: %+v, %v; want revoked", gone, err)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Duration != 40*time.Second || got.Term != l.Term || time.Until(got.ExpiresAt) < 20*time.Second {
		t.Fatalf("Get after the longer renew: %+v, %v", got, err)
	}
	l2.Duration = time.Second
	l3, err := b.Renew(ctxT(t), l2)
	if err != nil || l3.Version != l2.Version || time.Until(l3.ExpiresAt) < 20*time.Second {
		t.Fatalf("shorter renew: %+v, %v; want the 40s etcd lease kept", l3, err)
	}
}
