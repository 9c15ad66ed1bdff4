package bloblease_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// reqInc is req for incarnation inc.
func reqInc(election, id, inc string, d time.Duration) backendkit.AcquireRequest {
	r := req(election, id, d)
	r.Incarnation = inc
	return r
}

// TestStaleReleaseAfterReacquire: a restarted holder (incarnation B, same
// identity, so the same Azure lease id, its own client) takes the lease
// incarnation A still holds at once, with a strictly higher term. A's
// delayed Renew fails with ErrLeaseLost and its delayed Release of its own
// lease is a no-op, so nobody else can take the lease B holds. B's Release
// frees it; releasing it again once another holds it is not an error and
// frees nothing.
func TestStaleReleaseAfterReacquire(t *testing.T) {
	a, b, e := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	incA, incB := backendkit.NewIncarnation(), backendkit.NewIncarnation()
	la, err := a.Acquire(ctxT(t), reqInc(e, "node", incA, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctxT(t), reqInc(e, "node", incB, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term <= la.Term || lb.Incarnation != incB {
		t.Fatalf("new incarnation's Acquire = term %d incarnation %q, want a term above %d and %q", lb.Term, lb.Incarnation, la.Term, incB)
	}
	if _, err := a.Renew(ctxT(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("stale Renew: %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatalf("stale Release: %v", err)
	}
	got, err := a.Get(ctxT(t), e)
	if err != nil || got.Holder != "node" || got.Term != lb.Term || got.Incarnation != incB {
		t.Fatalf("Get after stale Release = %+v, %v; want B's lease (term %d)", got, err, lb.Term)
	}
	var held *backendkit.HeldError
	if _, err := a.Acquire(ctxT(t), reqInc(e, "other", backendkit.NewIncarnation(), 15*time.Second)); !errors.As(err, &held) || held.Holder.Term != lb.Term {
		t.Fatalf("other identity's Acquire after stale Release: %v, want a HeldError naming term %d", err, lb.Term)
	}
	if lb, err = b.Renew(ctxT(t), lb); err != nil {
		t.Fatalf("B's Renew: %v", err)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after B's Release = %+v, %v; want ErrNoLease", got, err)
	}
	lo, err := a.Acquire(ctxT(t), reqInc(e, "other", backendkit.NewIncarnation(), 15*time.Second))
	if err != nil || lo.Term <= lb.Term {
		t.Fatalf("Acquire after B's Release = %+v, %v; want a term above %d", lo, err, lb.Term)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatalf("Release of a lost lease: %v", err)
	}
	if got, err := a.Get(ctxT(t), e); err != nil || got.Holder != "other" || got.Term != lo.Term {
		t.Fatalf("Get after releasing a lost lease = %+v, %v; want other's lease", got, err)
	}
}

// TestStaleAcquireThenRenew: a delayed Acquire of the holder's own
// incarnation (a retry whose reply nobody reads) that lands after the
// holder's acquisition keeps the term but rewrites the record; the
// holder's Release with the lease it had is then a no-op, but its next
// Renew returns the blob's current ETag, so its own Release frees the lease
// again.
func TestStaleAcquireThenRenew(t *testing.T) {
	a, b, e, inc := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{}), electiontesting.Election(t), backendkit.NewIncarnation()
	lb, err := b.Acquire(ctxT(t), reqInc(e, "node", inc, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	late, err := a.Acquire(ctxT(t), reqInc(e, "node", inc, 15*time.Second)) // nobody reads its reply
	if err != nil {
		t.Fatal(err)
	}
	if late.Term != lb.Term {
		t.Fatalf("same incarnation's delayed Acquire = term %d, want %d (its own leadership)", late.Term, lb.Term)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), e); err != nil {
		t.Fatalf("Get after a Release with a superseded ETag: %v; want the lease still held", err)
	}
	l, err := b.Renew(ctxT(t), lb)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctxT(t), l); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
	}
}

// TestStaleAcquireOfEarlierIncarnation: an earlier incarnation's delayed
// Acquire that lands after its successor took over is, to the backend, one
// more incarnation of the identity: it takes the lease (the contract's
// rule for a fixed identity) but never with a term the successor holds —
// the term rises again, the successor's Renew fails with ErrLeaseLost and
// its Release frees nothing. No two leaderships ever share a term.
func TestStaleAcquireOfEarlierIncarnation(t *testing.T) {
	a, b, e := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	incA, incB := backendkit.NewIncarnation(), backendkit.NewIncarnation()
	la, err := a.Acquire(ctxT(t), reqInc(e, "node", incA, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctxT(t), reqInc(e, "node", incB, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	late, err := a.Acquire(ctxT(t), reqInc(e, "node", incA, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !(la.Term < lb.Term && lb.Term < late.Term) {
		t.Fatalf("terms %d, %d, %d: want strictly rising (A, B, A's delayed Acquire)", la.Term, lb.Term, late.Term)
	}
	if _, err := b.Renew(ctxT(t), lb); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("B's Renew after A's delayed Acquire: %v, want ErrLeaseLost", err)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Term != late.Term || got.Incarnation != incA {
		t.Fatalf("Get after B's stale Release = %+v, %v; want term %d of incarnation A", got, err, late.Term)
	}
	// la (A's first term) is fenced off too: A's new term is not la's.
	if _, err := a.Renew(ctxT(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew of A's superseded term: %v, want ErrLeaseLost", err)
	}
}

// TestRacingIncarnations: two incarnations of one identity acquire the
// same held lease at once, many times. Both may succeed (each is a new
// incarnation), but never with one term: the record ends with the higher
// of the two terms and the other's Renew fails with ErrLeaseLost. The
// record writes under the shared lease id are compare-and-swaps on the
// ETag each decision read, so the later writer's term is computed from
// the earlier one's record.
func TestRacingIncarnations(t *testing.T) {
	for range 10 {
		e := electiontesting.Election(t)
		if _, err := newBackend(t, bloblease.Options{}).Acquire(ctxT(t), reqInc(e, "node", backendkit.NewIncarnation(), 15*time.Second)); err != nil {
			t.Fatal(err)
		}
		var (
			leases [2]fxelection.Lease
			errs   [2]error
			wg     sync.WaitGroup
		)
		for i := range leases {
			b := newBackend(t, bloblease.Options{})
			wg.Go(func() {
				leases[i], errs[i] = b.Acquire(ctxT(t), reqInc(e, "node", backendkit.NewIncarnation(), 15*time.Second))
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if leases[0].Term == leases[1].Term {
			t.Fatalf("two incarnations both acquired term %d", leases[0].Term)
		}
		hi, lo := leases[0], leases[1]
		if lo.Term > hi.Term {
			hi, lo = lo, hi
		}
		b := newBackend(t, bloblease.Options{})
		got, err := b.Get(ctxT(t), e)
		if err != nil || got.Term != hi.Term || got.Incarnation != hi.Incarnation {
			t.Fatalf("Get after the race = %+v, %v; want the higher term %d", got, err, hi.Term)
		}
		if _, err := b.Renew(ctxT(t), lo); !errors.Is(err, backendkit.ErrLeaseLost) {
			t.Fatalf("Renew by the lower term %d: %v, want ErrLeaseLost", lo.Term, err)
		}
		if _, err := b.Renew(ctxT(t), hi); err != nil {
			t.Fatalf("Renew by the higher term: %v", err)
		}
	}
}

// TestRecordWithoutIncarnation: a record written by a request naming no
// incarnation is read, and a holder's first request naming an incarnation
// gets a higher term once, which it then keeps.
func TestRecordWithoutIncarnation(t *testing.T) {
	b, e := newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	l0, err := b.Acquire(ctxT(t), req(e, "node", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	raw := blobRecord(t, b, e)
	if strings.Contains(raw, "incarnation") {
		t.Fatalf("record of a request without incarnation = %s, want no incarnation field", raw)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Term != l0.Term || got.Incarnation != "" {
		t.Fatalf("Get = %+v, %v; want term %d without incarnation", got, err, l0.Term)
	}
	inc := backendkit.NewIncarnation()
	l1, err := b.Acquire(ctxT(t), reqInc(e, "node", inc, 15*time.Second))
	if err != nil || l1.Term <= l0.Term {
		t.Fatalf("Acquire naming an incarnation = %+v, %v; want a term above %d", l1, err, l0.Term)
	}
	if raw := blobRecord(t, b, e); !strings.Contains(raw, `"incarnation":"`+inc+`"`) {
		t.Fatalf("record = %s, want incarnation %q", raw, inc)
	}
	l2, err := b.Acquire(ctxT(t), reqInc(e, "node", inc, 15*time.Second))
	if err != nil || l2.Term != l1.Term {
		t.Fatalf("re-acquire by the same incarnation = %+v, %v; want term %d", l2, err, l1.Term)
	}
}

// TestInvalidIncarnationWritesNothing: an Acquire naming a malformed
// incarnation fails before any write.
func TestInvalidIncarnationWritesNothing(t *testing.T) {
	b, e := newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	for _, inc := range []string{"has space", "a/b", strings.Repeat("x", backendkit.MaxIncarnationLen+1), "\x00"} {
		if _, err := b.Acquire(ctxT(t), reqInc(e, "node", inc, 15*time.Second)); err == nil || strings.Contains(err.Error(), inc) {
			t.Fatalf("Acquire with incarnation %q: %v, want an error not quoting it", inc, err)
		}
	}
	props, err := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlobClient(b.BlobName(e)).GetProperties(ctxT(t), nil)
	if !bloberror.HasCode(err, bloberror.BlobNotFound) {
		t.Fatalf("blob after refused Acquires: %+v, %v; want none", props, err)
	}
}

// blobRecord returns the decoded JSON record in election's blob metadata.
func blobRecord(t *testing.T, b *bloblease.Backend, election string) string {
	t.Helper()
	p, err := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlobClient(b.BlobName(election)).GetProperties(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range p.Metadata {
		if strings.EqualFold(k, bloblease.MetadataKey) && v != nil {
			raw, err := base64.StdEncoding.DecodeString(*v)
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
	}
	t.Fatal("no record in the blob's metadata")
	return ""
}

// TestReleaseMatchesReturnedVersion: every lease the backend hands out
// (Acquire, re-acquire, Renew) releases the blob's lease; so does a lease
// whose Version is the lease id alone (from Get, or built by hand), which
// is matched on lease id, holder and term only.
func TestReleaseMatchesReturnedVersion(t *testing.T) {
	b := newBackend(t, bloblease.Options{})
	acquire := func(t *testing.T, e string) fxelection.Lease {
		t.Helper()
		l, err := b.Acquire(ctxT(t), req(e, "node", 15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if id, etag, _ := strings.Cut(l.Version, ";"); id != bloblease.LeaseID("node") || etag == "" {
			t.Fatalf("acquired lease's Version = %q, want the lease id, ';' and an ETag", l.Version)
		}
		return l
	}
	ops := map[string]func(t *testing.T, e string) fxelection.Lease{
		"acquire": acquire,
		"re-acquire": func(t *testing.T, e string) fxelection.Lease {
			acquire(t, e)
			return acquire(t, e)
		},
		"renew": func(t *testing.T, e string) fxelection.Lease {
			l, err := b.Renew(ctxT(t), acquire(t, e))
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		"get": func(t *testing.T, e string) fxelection.Lease {
			acquire(t, e)
			got, err := b.Get(ctxT(t), e)
			if err != nil || got.Version != bloblease.LeaseID("node") {
				t.Fatalf("Get = %+v, %v; want Version %q", got, err, bloblease.LeaseID("node"))
			}
			return got
		},
		"lease id only": func(t *testing.T, e string) fxelection.Lease {
			l := acquire(t, e)
			return fxelection.Lease{Election: e, Holder: l.Holder, Term: l.Term, Version: bloblease.LeaseID(l.Holder)}
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			e := electiontesting.Election(t)
			l := op(t, e)
			if err := b.Release(ctxT(t), l); err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
				t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
			}
		})
	}
}

// TestReleaseLeaseIfMatch checks what Release relies on, on the server
// itself: Release Lease with If-Match on an ETag the blob no longer has
// fails with ConditionNotMet and leaves the lease active; with the
// current ETag it releases. (Azure documents If-Match on Lease Blob;
// this shows the emulator the tests run on honours it too.)
func TestReleaseLeaseIfMatch(t *testing.T) {
	b := newBackend(t, bloblease.Options{})
	e := electiontesting.Election(t)
	cc := newClient(t).ServiceClient().NewContainerClient(b.Container())
	bb := cc.NewBlockBlobClient(b.BlobName(e))
	up, err := bb.Upload(ctxT(t), streaming.NopCloser(bytes.NewReader(nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	bc := cc.NewBlobClient(b.BlobName(e))
	id := bloblease.LeaseID("node")
	lc, err := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctxT(t), 15, nil); err != nil {
		t.Fatal(err)
	}
	v := "x"
	md, err := bc.SetMetadata(ctxT(t), map[string]*string{"k": &v}, &blob.SetMetadataOptions{
		AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	old, cur := *up.ETag, *md.ETag
	if old == cur {
		t.Fatalf("SetMetadata kept the ETag %q", cur)
	}
	release := func(etag azcore.ETag) error {
		_, err := lc.ReleaseLease(ctxT(t), &lease.BlobReleaseOptions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
		})
		return err
	}
	if err := release(old); !bloberror.HasCode(err, bloberror.ConditionNotMet) {
		t.Fatalf("Release Lease with a stale If-Match: %v, want ConditionNotMet", err)
	}
	p, err := bc.GetProperties(ctxT(t), nil)
	if err != nil || p.LeaseState == nil || *p.LeaseState != lease.StateTypeLeased {
		t.Fatalf("lease state after the refused release = %v, %v; want leased", p.LeaseState, err)
	}
	if err := release(cur); err != nil {
		t.Fatalf("Release Lease with the current If-Match: %v", err)
	}
	p, err = bc.GetProperties(ctxT(t), nil)
	if err != nil || p.LeaseState == nil || *p.LeaseState != lease.StateTypeAvailable {
		t.Fatalf("lease state after the release = %v, %v; want available", p.LeaseState, err)
	}
}

// TestReleaseOtherVersions: a Version whose lease id is not the holder's,
// whose ETag the blob does not have, or that is malformed releases nothing
// and is not an error; Renew does not compare the ETag and returns the
// blob's current one.
func TestReleaseOtherVersions(t *testing.T) {
	b, e := newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	l, err := b.Acquire(ctxT(t), req(e, "node", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	id := bloblease.LeaseID("node")
	for _, v := range []string{";", ";" + strings.TrimPrefix(l.Version, id+";"), bloblease.LeaseID("other"), id + `;"0x0"`, id + ";;"} {
		r := l
		r.Version = v
		if err := b.Release(ctxT(t), r); err != nil {
			t.Fatalf("Release with Version %q: %v", v, err)
		}
		if got, err := b.Get(ctxT(t), e); err != nil || got.Holder != "node" || got.Term != l.Term {
			t.Fatalf("Get after Release with Version %q = %+v, %v; want the lease still held", v, got, err)
		}
	}
	r := l
	r.Version = id + `;"0x0"`
	renewed, err := b.Renew(ctxT(t), r)
	if err != nil || renewed.Version != l.Version {
		t.Fatalf("Renew with another ETag = %+v, %v; want Version %q", renewed, err, l.Version)
	}
	if err := b.Release(ctxT(t), renewed); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
	}
}
