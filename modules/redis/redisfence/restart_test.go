package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

// TestFixedIdentityRestartIsFenced: the README's fixed-identity advice with
// its fencing example. Elector 1 leads and writes through the guard; it is
// then cut off from the lease store (a SIGSTOP, a frozen VM, a partition)
// and still believes it leads. Elector 2, a restart with the SAME
// identity, leads at once — long before elector 1's lease could expire —
// with a strictly higher term, and writes. Elector 1's late write, made
// while it still believes it leads, is refused with fence.ErrStaleTerm
// (had elector 2 kept elector 1's term, the guard would accept both
// writers).
func TestFixedIdentityRestartIsFenced(t *testing.T) {
	ctx := ctxT(t)
	addr := newServer(t).Addr()
	g := redisfence.New(newClient(t, addr), redisfence.Options{})
	el := election(t)
	stream := "audit:" + redisfence.HashTag(el)

	// A long lease and renew deadline: elector 1 keeps believing it leads
	// for a minute after it was cut off, and a takeover by expiry cannot
	// happen within the test; only an immediate re-acquisition can.
	const lease, deadline = 2 * time.Minute, 90 * time.Second
	long := func(c *fxelection.Config) { c.LeaseDuration, c.RenewDeadline = lease, deadline }

	first := electiontesting.StartFaultyCandidate(t, newLease(t, newClient(t, addr)), el, "fixed", long)
	electiontesting.WaitFor(t, electiontesting.Eventually, "elector 1 to lead", first.Elector.IsLeader)
	var l1 fxelection.Lease
	ran, err := first.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		l1, _ = fxelection.LeaseFromContext(ctx)
		_, err := g.XAdd(ctx, stream, "writer", "1")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("elector 1's write: ran=%v %v", ran, err)
	}

	first.Faulty.Partition(true)
	partitioned := time.Now()
	second := electiontesting.StartCandidate(t, newLease(t, newClient(t, addr)), el, "fixed", long)
	electiontesting.WaitFor(t, 30*time.Second, "elector 2 (same identity) to lead", second.Elector.IsLeader)
	if took := time.Since(partitioned); took >= lease {
		t.Errorf("elector 2 led %v after elector 1 was cut off, want at once (lease %v)", took, lease)
	}
	var l2 fxelection.Lease
	ran, err = second.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		l2, _ = fxelection.LeaseFromContext(ctx)
		_, err := g.XAdd(ctx, stream, "writer", "2")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("elector 2's write: ran=%v %v", ran, err)
	}
	if l2.Term <= l1.Term {
		t.Errorf("elector 2 leads with term %d, its cut-off predecessor with %d: want a strictly higher term", l2.Term, l1.Term)
	}

	// Elector 1 still believes it leads (its renew deadline is far off)
	// and writes with its old term.
	var lateErr error
	ran, err = first.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		if l, _ := fxelection.LeaseFromContext(ctx); l.Term != l1.Term {
			return fmt.Errorf("elector 1 leads with term %d, want its first %d", l.Term, l1.Term)
		}
		_, lateErr = g.XAdd(ctx, stream, "writer", "1-late")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatalf("elector 1 no longer believes it leads %v after it was cut off (renew deadline %v)", time.Since(partitioned), deadline)
	}
	if !errors.Is(lateErr, fence.ErrStaleTerm) {
		t.Errorf("elector 1's late write: %v, want fence.ErrStaleTerm", lateErr)
	}
	var writers []string
	for _, m := range newClient(t, addr).XRange(ctx, stream, "-", "+").Val() {
		writers = append(writers, fmt.Sprint(m.Values["writer"]))
	}
	if fmt.Sprint(writers) != "[1 2]" {
		t.Fatalf("stream %v, want [1 2]: a late write of the cut-off elector landed", writers)
	}
}
