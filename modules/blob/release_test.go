package bloblease_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// TestStaleReleaseAfterReacquire: a restarted holder (incarnation B, same
// identity, so the same Azure lease id, its own client) re-acquires the
// lease incarnation A still holds and keeps the term; A's delayed Release
// of its own lease is then a no-op (B's re-acquisition rewrote the record,
// so the blob's ETag is no longer the one A's lease carries), so nobody
// else can take the lease B holds. B's Release frees it; releasing it again
// once another holds it is not an error and frees nothing.
func TestStaleReleaseAfterReacquire(t *testing.T) {
	a, b, e := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{}), electiontest.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "node", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctxT(t), req(e, "node", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term != la.Term {
		t.Fatalf("re-acquire = term %d, want %d", lb.Term, la.Term)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatalf("stale Release: %v", err)
	}
	got, err := a.Get(ctxT(t), e)
	if err != nil || got.Holder != "node" || got.Term != lb.Term {
		t.Fatalf("Get after stale Release = %+v, %v; want B's lease (term %d)", got, err, lb.Term)
	}
	var held *fxelection.HeldError
	if _, err := a.Acquire(ctxT(t), req(e, "other", 15*time.Second)); !errors.As(err, &held) || held.Holder.Term != lb.Term {
		t.Fatalf("other identity's Acquire after stale Release: %v, want a HeldError naming term %d", err, lb.Term)
	}
	if err := b.Release(ctxT(t), lb); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get(ctxT(t), e); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("Get after B's Release = %+v, %v; want ErrNoLease", got, err)
	}
	lo, err := a.Acquire(ctxT(t), req(e, "other", 15*time.Second))
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

// TestStaleAcquireThenRenew: an earlier incarnation's delayed Acquire that
// lands after the restarted holder's re-acquisition rewrites the record;
// the holder's Release with the lease it had is then a no-op, but its next
// Renew returns the blob's current ETag, so its own Release frees the lease
// again.
func TestStaleAcquireThenRenew(t *testing.T) {
	a, b, e := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{}), electiontest.Election(t)
	lb, err := b.Acquire(ctxT(t), req(e, "node", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctxT(t), req(e, "node", 15*time.Second)); err != nil { // nobody reads its reply
		t.Fatal(err)
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
	if got, err := b.Get(ctxT(t), e); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
	}
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
			e := electiontest.Election(t)
			l := op(t, e)
			if err := b.Release(ctxT(t), l); err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(ctxT(t), e); !errors.Is(err, fxelection.ErrNoLease) {
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
	e := electiontest.Election(t)
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
	b, e := newBackend(t, bloblease.Options{}), electiontest.Election(t)
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
	if got, err := b.Get(ctxT(t), e); !errors.Is(err, fxelection.ErrNoLease) {
		t.Fatalf("Get after Release = %+v, %v; want ErrNoLease", got, err)
	}
}
