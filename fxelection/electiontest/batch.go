package electiontest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// renewBatch checks BatchRenewer, for backends that implement it: one
// batch where one lease was lost (taken over by another candidate), one
// never held and one with the wrong term reports exactly those as lost
// (ErrLeaseLost), renews the others with their terms unchanged, and leaves
// the new holder's lease alone.
func (s *suite) renewBatch(t *testing.T) {
	a, other := s.newBackend(t), s.newBackend(t)
	br, ok := a.(backendkit.BatchRenewer)
	if !ok {
		t.Fatal("the backend does not implement backendkit.BatchRenewer")
	}
	if got := br.RenewBatch(electiontesting.Context(t), nil); len(got) != 0 {
		t.Fatalf("RenewBatch(nil) returned %d results", len(got))
	}
	base := electiontesting.Election(t)
	e := [4]string{base + "-0", base + "-1", base + "-2", base + "-3"}
	l0 := mustAcquire(t, a, s.req(e[0], "a", 0))
	l1 := mustAcquire(t, a, s.req(e[1], "a", 0))
	l2 := mustAcquire(t, a, s.req(e[2], "a", 0))
	// e[1] changes hands: released, then taken by b.
	if err := a.Release(electiontesting.Context(t), l1); err != nil {
		t.Fatal(err)
	}
	lb := mustAcquire(t, other, s.req(e[1], "b", 0))
	never := fxelection.Lease{Election: e[3], Holder: "a", Term: l0.Term, Duration: time.Minute}
	wrongTerm := l2
	wrongTerm.Term = l2.Term + 1000

	leases := []fxelection.Lease{l0, l1, l2, never, wrongTerm}
	res := br.RenewBatch(electiontesting.Context(t), leases)
	if len(res) != len(leases) {
		t.Fatalf("RenewBatch returned %d results for %d leases", len(res), len(leases))
	}
	for _, i := range []int{0, 2} {
		if res[i].Err != nil {
			t.Fatalf("lease %d (%s): %v, want renewed", i, leases[i].Election, res[i].Err)
		}
		if got := res[i].Lease; got.Holder != "a" || got.Term != leases[i].Term || got.Election != leases[i].Election {
			t.Fatalf("lease %d renewed as %+v", i, got)
		}
	}
	for _, i := range []int{1, 3, 4} {
		if !errors.Is(res[i].Err, backendkit.ErrLeaseLost) {
			t.Fatalf("lease %d (%s): %v, want ErrLeaseLost", i, leases[i].Election, res[i].Err)
		}
	}
	if got, err := other.Get(electiontesting.Context(t), e[1]); err != nil || got.Holder != "b" || got.Term != lb.Term {
		t.Fatalf("after the batch, %s = %+v, %v; want b's lease (term %d)", e[1], got, err, lb.Term)
	}
	if _, err := a.Get(electiontesting.Context(t), e[3]); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("the batch created a lease nobody acquired: %v", err)
	}
	// The renewed leases are good for the next renewal.
	if _, err := a.Renew(electiontesting.Context(t), res[0].Lease); err != nil {
		t.Fatalf("Renew of a lease RenewBatch returned: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, r := range br.RenewBatch(ctx, []fxelection.Lease{l0, l2}) {
		if r.Err == nil {
			t.Fatalf("lease %d renewed with a cancelled context", i)
		}
	}
}

// acquireBatch checks BatchAcquirer, for backends that implement it: one
// batch holding a free election, one held by another candidate, the
// caller's own lease continued by its incarnation and taken again by a new
// one, and two requests for one election gives each request what Acquire
// would have given it, made one after another in order: won, HeldError
// with the holder, the same term, a higher term, and the second of the two
// refused with the first as holder. Every lease won is the store's record
// afterwards and good for Renew; a cancelled batch writes nothing.
func (s *suite) acquireBatch(t *testing.T) {
	a, other := s.newBackend(t), s.newBackend(t)
	ba, ok := a.(backendkit.BatchAcquirer)
	if !ok {
		t.Fatal("the backend does not implement backendkit.BatchAcquirer")
	}
	ctx := electiontesting.Context(t)
	if got := ba.AcquireBatch(ctx, nil); len(got) != 0 {
		t.Fatalf("AcquireBatch(nil) returned %d results", len(got))
	}
	base := electiontesting.Election(t)
	e := [6]string{}
	for i := range e {
		e[i] = fmt.Sprintf("%s-%d", base, i)
	}
	inc, inc2 := backendkit.NewIncarnation(), backendkit.NewIncarnation()
	lb := mustAcquire(t, other, s.req(e[1], "b", 0))
	own := mustAcquire(t, a, s.reqInc(e[2], "a", inc, 0))
	old := mustAcquire(t, a, s.reqInc(e[3], "a", inc, 0))

	reqs := []backendkit.AcquireRequest{
		s.reqInc(e[0], "a", inc, 0),  // free: won
		s.reqInc(e[1], "a", inc, 0),  // b's: held
		s.reqInc(e[2], "a", inc, 0),  // ours, same incarnation: same term
		s.reqInc(e[3], "a", inc2, 0), // ours, new incarnation: higher term
		s.reqInc(e[4], "a", inc, 0),  // free: won …
		s.reqInc(e[4], "c", inc2, 0), // … then held by a
	}
	res := ba.AcquireBatch(ctx, reqs)
	if len(res) != len(reqs) {
		t.Fatalf("AcquireBatch returned %d results for %d requests", len(res), len(reqs))
	}
	for _, i := range []int{0, 2, 3, 4} {
		if res[i].Err != nil {
			t.Fatalf("request %d (%s as %s): %v, want won", i, reqs[i].Election, reqs[i].Identity, res[i].Err)
		}
		if got := res[i].Lease; got.Holder != "a" || got.Election != reqs[i].Election || got.Term == 0 {
			t.Fatalf("request %d won %+v", i, got)
		}
	}
	if he := wantHeld(t, res[1].Err, "b"); he.Holder.Term != lb.Term {
		t.Fatalf("request 1: held at term %d, want b's %d", he.Holder.Term, lb.Term)
	}
	wantHeld(t, res[5].Err, "a")
	if got := res[2].Lease.Term; got != own.Term {
		t.Fatalf("the same incarnation's request got term %d, want its own %d", got, own.Term)
	}
	if got := res[3].Lease.Term; got <= old.Term {
		t.Fatalf("a new incarnation's request got term %d, want above %d", got, old.Term)
	}
	for _, i := range []int{0, 2, 3, 4} {
		got, err := a.Get(ctx, reqs[i].Election)
		if err != nil || got.Holder != "a" || got.Term != res[i].Lease.Term {
			t.Fatalf("after the batch, %s = %+v, %v; want a's lease at term %d", reqs[i].Election, got, err, res[i].Lease.Term)
		}
		if _, err := a.Renew(ctx, res[i].Lease); err != nil {
			t.Fatalf("Renew of the lease AcquireBatch returned for %s: %v", reqs[i].Election, err)
		}
	}
	if got, err := other.Get(ctx, e[1]); err != nil || got.Holder != "b" || got.Term != lb.Term {
		t.Fatalf("after the batch, %s = %+v, %v; want b's lease (term %d)", e[1], got, err, lb.Term)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, r := range ba.AcquireBatch(cctx, []backendkit.AcquireRequest{s.req(e[5], "a", 0)}) {
		if r.Err == nil {
			t.Fatalf("request %d won with a cancelled context", i)
		}
	}
	if _, err := a.Get(ctx, e[5]); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("a cancelled batch created a lease: %v", err)
	}
}
