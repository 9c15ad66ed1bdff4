package ddblease_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// The observed-time rule: a follower takes over only after it has watched
// the same write (version and nonce) for a full lease, and its watch
// restarts at every gap (a missing item, a failed read). Every bound below
// is a lower bound on when a takeover may happen, so a slow machine can
// only make it easier to meet.

func req(e, id string, d time.Duration) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{Election: e, Identity: id, Metadata: map[string]string{"addr": id}, Duration: d}
}

// pollAcquire calls Acquire every step until it succeeds or limit passes;
// it fails the test on anything but ErrLeaseHeld.
func pollAcquire(t *testing.T, b *ddblease.Backend, r backendkit.AcquireRequest, step, limit time.Duration) (fxelection.Lease, time.Time) {
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

// wantHeldBy fails unless err is a *backendkit.HeldError naming holder.
func wantHeldBy(t *testing.T, err error, holder string) *backendkit.HeldError {
	t.Helper()
	var he *backendkit.HeldError
	if !errors.As(err, &he) || he.Holder.Holder != holder {
		t.Fatalf("Acquire: %v, want held by %q", err, holder)
	}
	return he
}

// getItem returns election's raw item in tbl (nil if none).
func getItem(t *testing.T, tbl, election string) map[string]types.AttributeValue {
	t.Helper()
	out, err := newClient(t).GetItem(ctxT(t), &dynamodb.GetItemInput{
		TableName:      aws.String(tbl),
		Key:            map[string]types.AttributeValue{ddblease.KeyAttribute: &types.AttributeValueMemberS{Value: election}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestTakeoverWaitsFullObservation: a holder that died long ago (by wall
// clock) is taken over only after the candidate itself has watched the
// same write for the whole lease duration, counted from its first read.
func TestTakeoverWaitsFullObservation(t *testing.T) {
	const d = 2 * time.Second
	a, e := newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d + 500*time.Millisecond)

	b := newBackend(t, ddblease.Options{})
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
// is never taken over: each renewal writes a new version.
func TestRenewalsPreventTakeover(t *testing.T) {
	const d = time.Second
	a, b, e := newBackend(t, ddblease.Options{}), newBackend(t, ddblease.Options{}), electiontesting.Election(t)
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
			t.Fatalf("renewal reused version %q", l.Version)
		}
		versions[l.Version] = true
		_, err := b.Acquire(ctxT(t), req(e, "b", d))
		wantHeldBy(t, err, "a")
	}
}

// TestReleaseKeepsItem: a release leaves the item (holding the term) and
// the next holder gets a higher term at once, without waiting.
func TestReleaseKeepsItem(t *testing.T) {
	a, b, e := newBackend(t, ddblease.Options{}), newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctxT(t), la); err != nil {
		t.Fatal(err)
	}
	it := getItem(t, table, e)
	v, ok := it[ddblease.ValueAttribute].(*types.AttributeValueMemberS)
	if !ok || !strings.Contains(v.Value, `"released":true`) {
		t.Fatalf("released item = %v", it)
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

// TestForgedLease: Renew and Release check holder and term, not only the
// version.
func TestForgedLease(t *testing.T) {
	a, b, e := newBackend(t, ddblease.Options{}), newBackend(t, ddblease.Options{}), electiontesting.Election(t)
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
	if err := b.Release(ctxT(t), forged); err != nil {
		t.Fatalf("forged Release: %v", err)
	}
	got, err := b.Get(ctxT(t), e)
	if err != nil || got.Holder != "a" || got.Version != la.Version || !got.ExpiresAt.IsZero() {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

// TestGetStartsObservation: a write seen by Get counts as observed, so an
// Acquire a full duration later takes over at its first call.
func TestGetStartsObservation(t *testing.T) {
	const d = time.Second
	a, b, e := newBackend(t, ddblease.Options{}), newBackend(t, ddblease.Options{}), electiontesting.Election(t)
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

// restoredAfterGap: a holds a lease of duration d; the follower starts
// watching it; half a lease later gap removes the item (or the table) and
// lets the follower read in the gap; then the very same item is put back,
// version and value, so the follower sees the write it watched. It must
// wait a full d from the restore: its earlier watch ended with the gap.
func restoredAfterGap(t *testing.T, opts ddblease.Options, gap func(t *testing.T, follower *ddblease.Backend, e string)) {
	const d = 2 * time.Second
	tbl := opts.Table
	a, follower, e := newBackend(t, opts), newBackend(t, opts), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", d))
	if err != nil {
		t.Fatal(err)
	}
	it := getItem(t, tbl, e)
	_, err = follower.Acquire(ctxT(t), req(e, "f", d))
	wantHeldBy(t, err, "a")
	firstSight := time.Now()

	time.Sleep(d / 2)
	gap(t, follower, e)
	restored := time.Now()
	putItem(t, tbl, it)

	// Past a full lease from the first sight: a watch that spanned the gap
	// would take over here.
	time.Sleep(time.Until(firstSight.Add(d + d/10)))
	lf, at := pollAcquire(t, follower, req(e, "f", d), 50*time.Millisecond, 3*d+10*time.Second)
	if took := at.Sub(restored); took < d {
		t.Fatalf("took over %v after the item came back (%v after first sight), before a full lease %v of watching it again",
			took.Round(time.Millisecond), at.Sub(firstSight).Round(time.Millisecond), d)
	}
	if lf.Term <= la.Term {
		t.Fatalf("takeover term %d, want > %d", lf.Term, la.Term)
	}
}

// TestMissingItemRestartsObservation: the item vanishes while a follower
// watches it and comes back unchanged: the follower's watch starts again.
func TestMissingItemRestartsObservation(t *testing.T) {
	restoredAfterGap(t, ddblease.Options{Table: table}, func(t *testing.T, follower *ddblease.Backend, e string) {
		deleteItem(t, table, e)
		if _, err := follower.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("Get of a missing item: %v, want ErrNoLease", err)
		}
	})
}

// TestFailedReadRestartsObservation: the table is gone while a follower
// watches (its read fails: a store failure; SkipCreateTable keeps it from
// creating the table) and comes back with the same item: the follower's
// watch starts again.
func TestFailedReadRestartsObservation(t *testing.T) {
	tbl := newTable()
	if err := ddblease.CreateTable(ctxT(t), newClient(t), tbl); err != nil {
		t.Fatal(err)
	}
	restoredAfterGap(t, ddblease.Options{Table: tbl, SkipCreateTable: true}, func(t *testing.T, follower *ddblease.Backend, e string) {
		c := newClient(t)
		if _, err := c.DeleteTable(ctxT(t), &dynamodb.DeleteTableInput{TableName: aws.String(tbl)}); err != nil {
			t.Fatal(err)
		}
		_, err := follower.Get(ctxT(t), e)
		if err == nil || !backendkit.IsStoreFailure(err) {
			t.Fatalf("Get with the table gone: %v, want a store failure", err)
		}
		if err := ddblease.CreateTable(ctxT(t), c, tbl); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDeletedItemHigherTerm: an item deleted from outside is re-created
// by the next Acquire at a clock-seeded term above every earlier one, and
// the deleted holder's Renew fails; its item version does not repeat
// either.
func TestDeletedItemHigherTerm(t *testing.T) {
	a, b, e := newBackend(t, ddblease.Options{}), newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	deleteItem(t, table, e)
	if _, err := a.Renew(ctxT(t), la); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew after the item was deleted: %v", err)
	}
	lb, err := b.Acquire(ctxT(t), req(e, "b", time.Minute))
	if err != nil || lb.Term <= la.Term || lb.Version == la.Version {
		t.Fatalf("Acquire after delete = %+v, %v; want term > %d and a new version", lb, err, la.Term)
	}
}
