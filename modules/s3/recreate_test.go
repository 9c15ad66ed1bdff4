package s3lease_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// The observed-time rule across gaps: a follower's watch of a record
// counts only while it keeps reading that same write (ETag and nonce). A
// missing object, a failed read or a re-created bucket starts it afresh.
// Every bound below is a lower bound on when a takeover may happen, so a
// slow machine can only make it easier to meet.

// objectBody returns the raw body of b's object for election.
func objectBody(t *testing.T, b *s3lease.Backend, election string) []byte {
	t.Helper()
	obj, err := newClient(t).GetObject(ctxT(t), b.Bucket(), b.Key(election), minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	body, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// putBody writes body as b's object for election, as an operator restoring
// a backup would, and returns its ETag.
func putBody(t *testing.T, b *s3lease.Backend, election string, body []byte) string {
	t.Helper()
	info, err := newClient(t).PutObject(ctxT(t), b.Bucket(), b.Key(election), bytes.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true})
	if err != nil {
		t.Fatal(err)
	}
	return info.ETag
}

// wantHeldBy fails unless err is a *backendkit.HeldError naming holder.
func wantHeldBy(t *testing.T, err error, holder string) *backendkit.HeldError {
	t.Helper()
	var he *backendkit.HeldError
	if !errors.As(err, &he) || he.Holder.Holder != holder {
		t.Fatalf("Acquire: %v, want held by %q", err, holder)
	}
	return he
}

// restoredAfterGap runs the shared scenario: a holds a lease of duration
// d; the follower starts watching it; half a lease later gap removes the
// object (or the bucket) and lets the follower read in the gap; then the
// very same body is put back, so the object has the ETag and write nonce
// the follower watched. The follower must wait a full d from the restore:
// its earlier watch ended with the gap.
func restoredAfterGap(t *testing.T, opts s3lease.Options, gap func(t *testing.T, follower *s3lease.Backend, e string)) {
	const d = 2 * time.Second
	a, follower, e := newBackend(t, opts), newBackend(t, opts), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	body := objectBody(t, a, e)
	_, err = follower.Acquire(ctxT(t), req(e, "f", d))
	wantHeldBy(t, err, "a")
	firstSight := time.Now()

	time.Sleep(d / 2)
	gap(t, follower, e)
	restored := time.Now()
	if etag := putBody(t, a, e, body); etag != la.Version {
		// Premise, not verdict: MinIO's ETag of a single-part PUT is the
		// MD5 of the body.
		t.Fatalf("restored object has ETag %q, the original %q: the store does not hash bodies", etag, la.Version)
	}

	// Past a full lease from the first sight: a watch that spanned the
	// gap would take over here.
	time.Sleep(time.Until(firstSight.Add(d + d/10)))
	lf, at := pollAcquire(t, follower, req(e, "f", d), 50*time.Millisecond, 3*d+10*time.Second)
	if took := at.Sub(restored); took < d {
		t.Fatalf("took over %v after the record came back (%v after first sight), before a full lease %v of watching it again",
			took.Round(time.Millisecond), at.Sub(firstSight).Round(time.Millisecond), d)
	}
	if lf.Term <= la.Term {
		t.Fatalf("takeover term %d, want > %d", lf.Term, la.Term)
	}
}

// TestMissingObjectRestartsObservation: the object vanishes while a
// follower watches it (the follower's Get sees it missing) and comes back
// byte for byte: the follower's watch starts again.
func TestMissingObjectRestartsObservation(t *testing.T) {
	restoredAfterGap(t, s3lease.Options{}, func(t *testing.T, follower *s3lease.Backend, e string) {
		deleteObject(t, follower, e)
		if _, err := follower.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("Get of a missing object: %v, want ErrNoLease", err)
		}
	})
}

// TestFailedReadRestartsObservation: the bucket is gone while a follower
// watches (its read fails: NoSuchBucket is a store failure, not a missing
// object) and comes back with the same object: the follower's watch starts
// again.
func TestFailedReadRestartsObservation(t *testing.T) {
	name := newBucket(t)
	restoredAfterGap(t, s3lease.Options{Bucket: name}, func(t *testing.T, follower *s3lease.Backend, e string) {
		if err := removeBucket(ctxT(t), newClient(t), name); err != nil {
			t.Fatal(err)
		}
		_, err := follower.Get(ctxT(t), e)
		if err == nil || errors.Is(err, backendkit.ErrNoLease) || errors.Is(err, backendkit.ErrLeaseHeld) {
			t.Fatalf("Get with the bucket gone: %v, want a store failure", err)
		}
		if err := newClient(t).MakeBucket(ctxT(t), name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRecreatedBucketNewRecordWaitsFullLease: a follower watched a record
// for more than a full lease (without trying to take it over); the bucket
// is then deleted and re-created behind its back, and a new leader writes.
// The follower must not take the new record over before it has watched
// that record itself for a full lease.
func TestRecreatedBucketNewRecordWaitsFullLease(t *testing.T) {
	const d = 2 * time.Second
	name := newBucket(t)
	opts := s3lease.Options{Bucket: name}
	old, follower, leader, e := newBackend(t, opts), newBackend(t, opts), newBackend(t, opts), electiontesting.Election(t)
	lo, err := old.Acquire(ctxT(t), req(e, "old", d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = follower.Acquire(ctxT(t), req(e, "f", d))
	wantHeldBy(t, err, "old")
	time.Sleep(d + d/2)

	recreated := time.Now()
	recreateBucket(t, name)
	ln, err := leader.Acquire(ctxT(t), req(e, "new", d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = follower.Acquire(ctxT(t), req(e, "f", d))
	if he := wantHeldBy(t, err, "new"); he.Holder.Term != ln.Term || he.Holder.Version != ln.Version {
		t.Fatalf("follower sees %+v, the new leader holds %+v", he.Holder, ln)
	}
	lf, at := pollAcquire(t, follower, req(e, "f", d), 50*time.Millisecond, 3*d+10*time.Second)
	if took := at.Sub(recreated); took < d {
		t.Fatalf("took the new record over %v after the bucket was re-created, before a full lease %v", took.Round(time.Millisecond), d)
	}
	if lf.Term <= ln.Term || ln.Term <= lo.Term {
		t.Fatalf("terms old %d, new %d, follower %d: want strictly increasing", lo.Term, ln.Term, lf.Term)
	}
}
