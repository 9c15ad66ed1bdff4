package natslease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestRenewChecksIncarnation: a record of another incarnation of the same
// identity with the same term (clock-seeded terms handed out after a lost
// record can coincide) is not the caller's lease. Renew and Release
// compared holder and term only and then wrote with a compare-and-swap on
// whatever version they read, so the outcome of the two incarnations' race
// was decided by versions alone: the old incarnation renewed, or released,
// its successor's lease, and both wrote with one term.
func TestRenewChecksIncarnation(t *testing.T) {
	srv, admin := newServer(t)
	old := newBackend(t, srv.URL(), cachelease.Options{})
	e := electionName(t)
	l1, err := old.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The successor's record: same identity and term, another incarnation.
	succ := l1.Clone()
	succ.Incarnation = backendkit.NewIncarnation()
	succ.Version = ""
	v, err := backendkit.MarshalValue(succ, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Put(ctxT(t), old.Key(e), v); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Renew(ctxT(t), l1); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("old incarnation's Renew of its successor's record: %v, want ErrLeaseLost", err)
	}
	if err := old.Release(ctxT(t), l1); err != nil {
		t.Fatalf("old incarnation's Release: %v, want nil", err)
	}
	got, err := newBackend(t, srv.URL(), cachelease.Options{}).Get(ctxT(t), e)
	if err != nil || got.Incarnation != succ.Incarnation {
		t.Fatalf("after the old incarnation's Release: %+v, %v; want the successor's lease", got, err)
	}
}
