package etcdlease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// TestGetLiveInLastSecond: etcd reports a lease's remaining TTL in whole
// seconds, rounded down, so a live etcd lease with under a second left
// reports 0. Get must still report the lease (its key exists, Acquire
// treats it as held and the holder's own re-acquire continues its term):
// were it to say ErrNoLease, a re-acquire by the same holder after it would
// carry the term of a leadership Get said had ended.
func TestGetLiveInLastSecond(t *testing.T) {
	c := sharedCluster(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	e := electiontesting.Election(t)
	req := backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Second, Incarnation: backendkit.NewIncarnation()}
	l, err := b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	// A 1 s etcd lease has under a second left at once.
	got, err := b.Get(ctxT(t), e)
	if errors.Is(err, backendkit.ErrNoLease) {
		again, aerr := b.Acquire(ctxT(t), req)
		t.Fatalf("Get of a live 1s lease right after Acquire: ErrNoLease; a re-acquire then got term %d (was %d), %v", again.Term, l.Term, aerr)
	}
	if err != nil || got.Term != l.Term || got.Holder != "a" {
		t.Fatalf("Get = %+v, %v; want term %d held by a", got, err, l.Term)
	}
}
