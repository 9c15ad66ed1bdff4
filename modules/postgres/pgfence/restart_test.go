package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestFixedIdentityRestartIsFenced: a process with a fixed identity is
// paused (here: partitioned from the lease store) while it leads, and a
// restarted process with the same identity, a new Elector, takes over at
// once. The new one leads with a strictly higher term, so the paused one's
// late write, made while it still believes it leads, is refused by the
// fence; its successor's writes go through.
//
// The timing is generous so that the verdict does not depend on the
// machine's load: the lease (60 s) cannot expire during the test, so the
// second elector can lead only by taking over its own identity's live
// lease, and the first keeps believing it leads (renew deadline 40 s).
func TestFixedIdentityRestartIsFenced(t *testing.T) {
	ctx := ctxT(t)
	d := newData(t, newPool(t, 4))
	el := election(t)
	timing := func(cfg *fxelection.Config) {
		cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = time.Minute, 40*time.Second, 200*time.Millisecond
		cfg.MaxBackoff = time.Second
	}
	backend := func() *pglease.Backend {
		b, err := pglease.New(newPool(t, 4), pglease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}

	first := electiontesting.StartFaultyCandidate(t, backend(), el, "fixed", timing)
	electiontesting.WaitFor(t, electiontesting.Eventually, "the first elector to lead", first.Elector.IsLeader)
	var oldLease fxelection.Lease
	ran, err := first.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		oldLease, _ = fxelection.LeaseFromContext(ctx)
		_, err := d.write(ctx, "first")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("first elector's write: ran=%v %v", ran, err)
	}

	first.Faulty.Partition(true) // paused: it hears nothing from the lease store
	second := electiontesting.StartCandidate(t, backend(), el, "fixed", timing)
	electiontesting.WaitFor(t, electiontesting.Eventually, "the restarted elector to lead", second.Elector.IsLeader)
	ran, err = second.Elector.RunIfLeader(ctx, func(ctx context.Context) error {
		lease, _ := fxelection.LeaseFromContext(ctx)
		if lease.Term <= oldLease.Term {
			t.Errorf("restarted elector leads with term %d, its paused predecessor with %d: want a strictly higher term", lease.Term, oldLease.Term)
		}
		_, err := d.write(ctx, "second")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("restarted elector's write: ran=%v %v", ran, err)
	}

	// The paused one resumes its work and writes with the term it has.
	late := func(ctx context.Context) error { _, err := d.write(ctx, "first-late"); return err }
	ran, err = first.Elector.RunIfLeader(ctx, late)
	if !ran {
		// Only if the machine stalled past the renew deadline: the write
		// a paused process would make is the same.
		t.Log("the partitioned elector stepped down; writing with its old lease's token instead")
		err = late(fence.WithToken(ctx, fence.TokenOf(oldLease)))
	}
	if !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("paused predecessor's late write: %v, want fence.ErrStaleTerm", err)
	}
	ran, err = second.Elector.RunIfLeader(ctx, func(ctx context.Context) error { _, err := d.write(ctx, "second"); return err })
	if !ran || err != nil {
		t.Fatalf("restarted elector's second write: ran=%v %v", ran, err)
	}
	if _, writers := d.rows(t); fmt.Sprint(writers) != "[first second second]" {
		t.Fatalf("committed writes %v", writers)
	}
}
