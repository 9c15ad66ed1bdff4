package natslease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestRecreatedBucketRevisionOne reproduces the reported takeover: an old
// leader's record is revision 1 of a fresh bucket; a follower watches it
// for more than a full lease; the bucket is then deleted and re-created
// (the managed store re-creates it on the new leader's first operation)
// and the new leader's record is revision 1 again. The follower, which
// had seen "revision 1" since before the lease ran out, must not take
// the new leader's lease a millisecond after it was written: it has
// never seen this write (another nonce) for a full lease. With the
// tracker keyed on the revision alone, it did.
func TestRecreatedBucketRevisionOne(t *testing.T) {
	srv := testserver.NewNats(t, testserver.NatsOptions{})
	admin := jsOf(t, connect(t, srv.URL()))
	recreateBucket(t, admin) // a fresh bucket: the next write is revision 1
	const ttl = 500 * time.Millisecond
	old := newBucketBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
	follower := newBucketBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
	leader := newBucketBackend(t, srv.URL(), cachelease.Options{DisablePush: true})
	e := electionName(t)
	req := func(id string, d time.Duration) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: id, Incarnation: backendkit.NewIncarnation(), Duration: d}
	}

	lo, err := old.Acquire(ctxT(t), req("old", ttl))
	if err != nil {
		t.Fatal(err)
	}
	if lo.Version != "1" {
		t.Fatalf("old record at revision %s, want 1 of a fresh bucket", lo.Version)
	}
	var held *backendkit.HeldError
	if _, err := follower.Acquire(ctxT(t), req("follower", ttl)); !errors.As(err, &held) {
		t.Fatalf("follower's first attempt: %v, want HeldError", err)
	}
	time.Sleep(ttl + ttl/2) // a full lease of revision 1 seen, short of acting on it

	recreateBucket(t, admin)
	ln, err := leader.Acquire(ctxT(t), req("new", ttl))
	if err != nil {
		t.Fatal(err)
	}
	if ln.Version != "1" {
		t.Fatalf("new leader's record at revision %s, want 1 again (the shape of the report)", ln.Version)
	}
	_, err = follower.Acquire(ctxT(t), req("follower", ttl))
	if !errors.As(err, &held) || held.Holder.Holder != "new" || held.Holder.Term != ln.Term {
		t.Fatalf("follower's attempt right after the new leader's write: %v, want HeldError by the new leader (term %d)", err, ln.Term)
	}
	if _, err := leader.Renew(ctxT(t), ln); err != nil {
		t.Fatalf("new leader's Renew: %v", err)
	}
}
