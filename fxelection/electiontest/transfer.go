package electiontest

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// transfer checks backendkit.Transferer: the holder's lease is replaced in
// one step by a record held by the request's identity with a higher term
// and its metadata; that identity then takes it with another incarnation
// at once, with a higher term still; a lease that is no longer the
// caller's (released, renewed by another run, taken) transfers nothing
// (ErrLeaseLost) and leaves the record as it was; a Notifier wakes its
// subscribers.
func (s *suite) transfer(t *testing.T) {
	a, other := s.newBackend(t), s.newBackend(t)
	tr, ok := a.(backendkit.Transferer)
	if !ok {
		t.Fatal("the backend does not implement backendkit.Transferer")
	}
	ctx := electiontesting.Context(t)
	e := electiontesting.Election(t)

	var woken chan struct{}
	if n, ok := other.(backendkit.Notifier); ok && !s.o.PushDisabled {
		woken = make(chan struct{}, 1)
		cancel := n.Subscribe(e, func() {
			select {
			case woken <- struct{}{}:
			default:
			}
		})
		defer cancel()
		time.Sleep(200 * time.Millisecond) // let the subscription reach the store
	}

	la := mustAcquire(t, a, s.reqInc(e, "a", backendkit.NewIncarnation(), 0))
	hint, err := tr.Transfer(ctx, la, backendkit.AcquireRequest{
		Election: e, Identity: "b", Duration: time.Minute, Metadata: map[string]string{"from": "a"},
	})
	if err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	if hint.Holder != "b" || hint.Term <= la.Term || hint.Metadata["from"] != "a" {
		t.Fatalf("Transfer returned %+v after term %d, want holder b, a higher term and metadata from=a", hint, la.Term)
	}
	got, err := other.Get(ctx, e)
	if err != nil || got.Holder != "b" || got.Term != hint.Term || got.Metadata["from"] != "a" {
		t.Fatalf("Get after Transfer = %+v, %v; want b's record of term %d", got, err, hint.Term)
	}
	if woken != nil {
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatal("Transfer woke no subscriber within 10s")
		}
	}
	// The old lease is gone: renewing or transferring it again fails and
	// changes nothing.
	if _, err := a.Renew(ctx, la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew of the transferred lease: %v, want ErrLeaseLost", err)
	}
	if _, err := tr.Transfer(ctx, la, s.req(e, "c", 0)); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of a lease transferred already: %v, want ErrLeaseLost", err)
	}
	if _, err := other.Acquire(ctx, s.reqInc(e, "c", backendkit.NewIncarnation(), 0)); !errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("c's Acquire of the hint: %v, want ErrLeaseHeld", err)
	}
	// The named identity takes it at once, with a higher term.
	lb := mustAcquire(t, other, s.reqInc(e, "b", backendkit.NewIncarnation(), 0))
	if lb.Term <= hint.Term {
		t.Fatalf("b took the hint with term %d, want above %d", lb.Term, hint.Term)
	}
	// A released lease transfers nothing either.
	if err := other.Release(ctx, lb); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := tr.Transfer(ctx, lb, s.req(e, "c", 0)); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer of a released lease: %v, want ErrLeaseLost", err)
	}
	if got, err := other.Get(ctx, e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after a refused Transfer of a released lease = %+v, %v; want ErrNoLease", got, err)
	}
}
