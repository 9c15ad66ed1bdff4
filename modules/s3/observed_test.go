package s3lease_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

func req(e, id string, d time.Duration) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{Election: e, Identity: id, Metadata: map[string]string{"addr": id}, Duration: d}
}

// pollAcquire calls Acquire every step until it succeeds or limit passes;
// it fails the test on anything but ErrLeaseHeld.
func pollAcquire(t *testing.T, b *s3lease.Backend, r backendkit.AcquireRequest, step, limit time.Duration) (fxelection.Lease, time.Time) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		l, err := b.Acquire(ctxT(t), r)
		if err == nil {
			return l, time.Now()
		}
		if !errors.Is(err, backendkit.ErrLeaseHeld) {
			t.Fatalf("Acquire: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not acquired within %v: %v", limit, err)
		}
		time.Sleep(step)
	}
}

// TestTakeoverWaitsFullObservation: a holder that died long ago (by wall
// clock) is taken over only after the candidate itself has watched the
// same ETag for the whole lease duration, counted from its first read.
func TestTakeoverWaitsFullObservation(t *testing.T) {
	const d = 2 * time.Second
	a, e := newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	// The holder dies; by its own clock its lease has expired long before
	// the candidate starts.
	time.Sleep(d + 500*time.Millisecond)

	b := newBackend(t, s3lease.Options{})
	firstSight := time.Now()
	lb, at := pollAcquire(t, b, req(e, "b", time.Minute), 50*time.Millisecond, 3*d+5*time.Second)
	if took := at.Sub(firstSight); took < d {
		t.Fatalf("taken over %v after the candidate's first read, before the full duration %v", took, d)
	}
	if lb.Term <= la.Term {
		t.Fatalf("takeover term %d, want > %d", lb.Term, la.Term)
	}
}

// TestRenewalsPreventTakeover: a holder renewing well within the duration
// is never taken over, because each renewal changes the ETag (the write
// nonce), even though the record's content is the same.
func TestRenewalsPreventTakeover(t *testing.T) {
	const d = time.Second
	a, b, e := newBackend(t, s3lease.Options{}), newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	l, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]bool{l.Version: true}
	end := time.Now().Add(4 * d)
	for time.Now().Before(end) {
		time.Sleep(d / 5)
		if l, err = a.Renew(ctxT(t), l); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if versions[l.Version] {
			t.Fatalf("renewal reused ETag %q", l.Version)
		}
		versions[l.Version] = true
		var he *backendkit.HeldError
		if _, err := b.Acquire(ctxT(t), req(e, "b", d)); !errors.As(err, &he) || he.Holder.Holder != "a" {
			t.Fatalf("Acquire while a renews: %v, want held by a", err)
		}
	}
}

// TestReleaseKeepsObject: a release leaves the object (holding the term)
// and the next holder gets a higher term at once, without waiting.
func TestReleaseKeepsObject(t *testing.T) {
	a, b, e := newBackend(t, s3lease.Options{}), newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatal(err)
	}
	obj, err := newClient(t).GetObject(ctxT(t), a.Bucket(), a.Key(e), minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(obj)
	_ = obj.Close()
	if err != nil {
		t.Fatalf("object gone after release: %v", err)
	}
	if !strings.Contains(string(body), `"released":true`) {
		t.Fatalf("released object = %s", body)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after release: %v", err)
	}
	lb, err := b.Acquire(ctxT(t), req(e, "b", time.Hour))
	if err != nil || lb.Term <= la.Term {
		t.Fatalf("Acquire after release = %+v, %v; want term > %d", lb, err, la.Term)
	}
	if _, err := a.Renew(ctxT(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew of a released lease: %v", err)
	}
}

// TestGarbageRecovery: a foreign object that replaced a lease blocks the
// election until an operator deletes it; the election then goes on with a
// term above every earlier one (clock-seeded), not at term 1.
func TestGarbageRecovery(t *testing.T) {
	b, e := newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	c := newClient(t)
	first, err := b.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("not json")
	if _, err := c.PutObject(ctxT(t), b.Bucket(), b.Key(e), bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := b.Acquire(ctxT(t), req(e, "a", 100*time.Millisecond)); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Fatalf("Acquire over garbage: %v", err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := c.RemoveObject(ctxT(t), b.Bucket(), b.Key(e), minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := b.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil || l.Term <= first.Term {
		t.Fatalf("Acquire after delete = %+v, %v; want term > %d", l, err, first.Term)
	}
}

// TestForgedLease: Renew and Release check holder and term, not only the
// ETag.
func TestForgedLease(t *testing.T) {
	a, b, e := newBackend(t, s3lease.Options{}), newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	forged := la
	forged.Holder = "b"
	if _, err := b.Renew(ctxT(t), forged); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("forged Renew: %v", err)
	}
	forged = la
	forged.Term++
	if _, err := b.Renew(ctxT(t), forged); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("forged-term Renew: %v", err)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Holder != "a" || got.Version != la.Version || !got.ExpiresAt.IsZero() {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := s3lease.New(nil, s3lease.Options{Bucket: "x"}); err == nil {
		t.Fatal("nil client accepted")
	}
	c := newClient(t)
	if _, err := s3lease.New(c, s3lease.Options{}); !errors.Is(err, s3lease.ErrBucketRequired) || !strings.Contains(err.Error(), "Bucket") {
		t.Fatalf("New without bucket: %v", err)
	}
	b, err := s3lease.New(c, s3lease.Options{Bucket: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Key("a/b c"); got != "fxelection/a%2Fb%20c.json" {
		t.Fatalf("Key = %q", got)
	}
	if b.BackendName() != "s3" {
		t.Fatalf("name %q", b.BackendName())
	}
	if _, ok := fxelection.Backend(b).(backendkit.Notifier); ok {
		t.Fatal("s3 backend claims push wake-up")
	}
}

// TestGetStartsObservation: a version seen by Get counts as observed, so
// an Acquire a full duration later takes over at its first call.
func TestGetStartsObservation(t *testing.T) {
	const d = time.Second
	a, b, e := newBackend(t, s3lease.Options{}), newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Version != la.Version {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	// The observation starts while Get runs, so no later than its
	// return: a full duration from there is past it, however slow the
	// call was.
	seen := time.Now()
	time.Sleep(time.Until(seen.Add(d + 50*time.Millisecond)))
	lb, err := b.Acquire(ctxT(t), req(e, "b", d))
	if err != nil || lb.Term <= la.Term {
		t.Fatalf("Acquire a full duration after Get = %+v, %v", lb, err)
	}
}
