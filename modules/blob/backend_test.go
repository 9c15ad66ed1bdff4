package bloblease_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

func TestLeaseID(t *testing.T) {
	guid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, a2, b := bloblease.LeaseID("node-a"), bloblease.LeaseID("node-a"), bloblease.LeaseID("node-b")
	if a != a2 || a == b {
		t.Fatalf("LeaseID not deterministic per identity: %s %s %s", a, a2, b)
	}
	for _, id := range []string{a, b, bloblease.LeaseID("")} {
		if !guid.MatchString(id) {
			t.Fatalf("LeaseID %q is not a version-5 UUID", id)
		}
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := bloblease.New(nil, bloblease.Options{Container: "c"}); err == nil {
		t.Fatal("nil client accepted")
	}
	server(t)
	if _, err := bloblease.New(newClient(t), bloblease.Options{}); !errors.Is(err, bloblease.ErrContainerRequired) || !strings.Contains(err.Error(), "Container") {
		t.Fatalf("New without container: %v", err)
	}
	b := newBackend(t, bloblease.Options{Prefix: "p/"})
	if got := b.BlobName("a/b."); got != "p/a%2Fb%2E" {
		t.Fatalf("BlobName = %q", got)
	}
	if b.BackendName() != "blob" {
		t.Fatalf("name %q", b.BackendName())
	}
}

// TestDurationRange: durations are rounded up to whole seconds and must be
// 15s–60s; the error names the Duration and the range.
func TestDurationRange(t *testing.T) {
	b, e := newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	for _, d := range []time.Duration{0, time.Second, 14 * time.Second, 60*time.Second + time.Millisecond, time.Hour} {
		_, err := b.Acquire(ctxT(t), req(e, "a", d))
		if !errors.Is(err, bloblease.ErrDuration) || !errors.Is(err, backendkit.ErrDurationRange) || !strings.Contains(err.Error(), "Duration") ||
			!strings.Contains(err.Error(), "15s") || !strings.Contains(err.Error(), "60s") {
			t.Fatalf("Acquire for %v: %v, want ErrDuration (and backendkit.ErrDurationRange) naming Duration and 15s–60s", d, err)
		}
	}
	for _, d := range []time.Duration{14*time.Second + 1, 15 * time.Second, 60 * time.Second} {
		l, err := b.Acquire(ctxT(t), req(e, "a", d))
		if err != nil {
			t.Fatalf("Acquire for %v: %v", d, err)
		}
		if l.Duration != d || l.ExpiresAt.IsZero() {
			t.Fatalf("lease %+v", l)
		}
	}
}

// TestSameIdentity: a restarted holder (new client, same identity) gets its
// lease back at once with the same term and lease id (its Version carries
// the new ETag of the record it rewrote); after a release it gets a new
// term.
func TestSameIdentity(t *testing.T) {
	e := electiontesting.Election(t)
	l1, err := newBackend(t, bloblease.Options{}).Acquire(ctxT(t), req(e, "a", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b2 := newBackend(t, bloblease.Options{})
	l2, err := b2.Acquire(ctxT(t), req(e, "a", 30*time.Second))
	if err != nil {
		t.Fatalf("re-acquire: %v", err)
	}
	id := bloblease.LeaseID("a") + ";"
	if l2.Term != l1.Term || l2.Version == l1.Version || !strings.HasPrefix(l1.Version, id) || !strings.HasPrefix(l2.Version, id) || !l2.AcquiredAt.Equal(l1.AcquiredAt) {
		t.Fatalf("re-acquired %+v, first %+v", l2, l1)
	}
	// The old lease value still renews (same term), as the new one does.
	if _, err := b2.Renew(ctxT(t), l1); err != nil {
		t.Fatalf("renew old value: %v", err)
	}
	if err := b2.Release(ctxT(t), l2); err != nil {
		t.Fatal(err)
	}
	l3, err := b2.Acquire(ctxT(t), req(e, "a", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l3.Term <= l1.Term {
		t.Fatalf("after release term %d, want > %d", l3.Term, l1.Term)
	}
	// The lease value from before the release is a different term: it
	// neither renews nor releases the new one.
	if _, err := b2.Renew(ctxT(t), l1); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("renew of an older term: %v, want ErrLeaseLost", err)
	}
	if err := b2.Release(ctxT(t), l1); err != nil {
		t.Fatal(err)
	}
	if got, err := b2.Get(ctxT(t), e); err != nil || got.Holder != "a" || got.Term != l3.Term || got.Version != bloblease.LeaseID("a") {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

// TestUnnamedHolder: a blob leased by someone who wrote no record under the
// lease (a candidate that crashed between taking the Azure lease and
// writing, or a foreign program) is never taken over nor reported as held
// by the previous record's holder.
func TestUnnamedHolder(t *testing.T) {
	a, b, e := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatal(err)
	}
	bb := newClient(t).ServiceClient().NewContainerClient(container).NewBlobClient(a.BlobName(e))
	id := bloblease.LeaseID("crashed")
	lc, err := lease.NewBlobClient(bb, &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctxT(t), 60, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctxT(t), req(e, "b", 15*time.Second)); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Acquire over an unnamed lease: %v, want ErrInvalidRecord", err)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Get of an unnamed lease: %v, want ErrInvalidRecord", err)
	}
	// Once it is released the election goes on with a higher term.
	if _, err := lc.ReleaseLease(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctxT(t), req(e, "b", 15*time.Second))
	if err != nil || lb.Term <= la.Term {
		t.Fatalf("Acquire after the unnamed lease: %+v, %v (previous term %d)", lb, err, la.Term)
	}
}
