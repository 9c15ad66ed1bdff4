package caslease_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
	"github.com/fxelection/fxelection/fxelection/electiontest"
)

const election = "billing"

var key = caslease.EscapedKey(testPrefix, election, 0)

func req(id, inc string, d time.Duration) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{Election: election, Identity: id, Incarnation: inc, Duration: d}
}

// value returns a valid store value of l, released or not.
func value(t testing.TB, l fxelection.Lease, released bool) []byte {
	t.Helper()
	v, err := backendkit.MarshalValue(l, released)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustAcquire(t testing.TB, b fxelection.Backend, r backendkit.AcquireRequest) fxelection.Lease {
	t.Helper()
	l, err := b.Acquire(context.Background(), r)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", r.Identity, err)
	}
	return l
}

func wantHeld(t testing.TB, err error, holder string) {
	t.Helper()
	var he *backendkit.HeldError
	if !errors.As(err, &he) || he.Holder.Holder != holder {
		t.Fatalf("Acquire: %v, want held by %s", err, holder)
	}
}

// TestDelayedCreateAcrossCreateAndDelete: a candidate reads the key
// missing and decides its term; its write is delayed in flight while
// another candidate creates the key with a higher term and an operator
// deletes it again. On a store with tombstones the delayed write is
// conditioned on the tombstone it read, so it cannot land on the newer
// one: the late candidate reads again and ends with a term above the
// deleted one. Run for a key never written and one deleted before (its
// tombstone is what the first read saw).
func TestDelayedCreateAcrossCreateAndDelete(t *testing.T) {
	for _, deletedBefore := range []bool{false, true} {
		t.Run(fmt.Sprint("deletedBefore=", deletedBefore), func(t *testing.T) {
			s := &fakeStore{tombstones: true}
			if deletedBefore {
				s.Put(key, []byte("x"))
				s.Delete(key)
			}
			arrived, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			s.before = func(_, _ string, v []byte) {
				if bytes.Contains(v, []byte(`"holder":"late"`)) {
					once.Do(func() { arrived <- struct{}{}; <-release })
				}
			}
			late, other := newBackend(watchless{s}), newBackend(watchless{s})
			type result struct {
				l   fxelection.Lease
				err error
			}
			done := make(chan result)
			go func() {
				l, err := late.Acquire(context.Background(), req("late", backendkit.NewIncarnation(), time.Minute))
				done <- result{l, err}
			}()
			<-arrived
			lo := mustAcquire(t, other, req("other", backendkit.NewIncarnation(), time.Minute))
			s.Delete(key)
			close(release)
			r := <-done
			if r.err != nil {
				t.Fatalf("late Acquire: %v", r.err)
			}
			if r.l.Term <= lo.Term {
				t.Fatalf("late candidate's term %d not above the deleted term %d", r.l.Term, lo.Term)
			}
			got, err := other.Get(context.Background(), election)
			if err != nil || got.Holder != "late" || got.Term != r.l.Term {
				t.Fatalf("Get: %+v, %v; want late's lease", got, err)
			}
		})
	}
}

// TestRecreatedNamespaceRepeatsVersions: a follower has watched a
// leader's record for longer than its lease; the namespace is then
// re-created (versions start again, so the new leader's first write has
// the version the follower watched) and a new leader writes. The follower
// must not take the new record for the one it watched: the write nonce
// differs, so its observation starts again and it takes over only after a
// full lease of the new record unchanged. Fake time.
func TestRecreatedNamespaceRepeatsVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 10 * time.Second
		s := &fakeStore{}
		leader, follower, newLeader := newBackend(watchless{s}), newBackend(watchless{s}), newBackend(watchless{s})
		ctx := context.Background()
		s.Recreate()
		lo := mustAcquire(t, leader, req("old", "", d))
		_, err := follower.Acquire(ctx, req("f", "", d))
		wantHeld(t, err, "old")
		time.Sleep(d + time.Second) // the follower has watched "old" for a full lease ...
		s.Recreate()                // ... but has not read since
		ln := mustAcquire(t, newLeader, req("new", "", d))
		if ln.Version != lo.Version {
			t.Fatalf("premise: new record's version %q, want the repeated %q", ln.Version, lo.Version)
		}
		_, err = follower.Acquire(ctx, req("f", "", d))
		wantHeld(t, err, "new")
		time.Sleep(d - time.Second)
		_, err = follower.Acquire(ctx, req("f", "", d))
		wantHeld(t, err, "new")
		time.Sleep(time.Second)
		lf := mustAcquire(t, follower, req("f", "", d))
		if lf.Term <= ln.Term {
			t.Fatalf("takeover term %d not above %d", lf.Term, ln.Term)
		}
	})
}

// TestLostRenewalResponse: a renewal the store applied but whose response
// the holder never got (a timeout; a version the store could not return)
// leaves the holder with the previous version. The failure is a store
// error, not ErrLeaseLost, and the holder's lease is still its own: the
// next Renew of the stale lease succeeds, and so does Release.
func TestLostRenewalResponse(t *testing.T) {
	for _, lost := range []error{context.DeadlineExceeded, caslease.ErrVersionUnknown} {
		t.Run(lost.Error(), func(t *testing.T) {
			s := &fakeStore{}
			b := newBackend(watchless{s})
			ctx := context.Background()
			l := mustAcquire(t, b, req("a", backendkit.NewIncarnation(), time.Minute))
			s.after = func(op, _ string, _ error) error { return lost }
			_, err := b.Renew(ctx, l)
			if err == nil || !errors.Is(err, lost) || errors.Is(err, backendkit.ErrLeaseLost) {
				t.Fatalf("Renew with a lost response: %v, want a store error", err)
			}
			s.after = nil
			if cur, _ := b.Get(ctx, election); cur.Version == l.Version {
				t.Fatal("premise: the renewal was not applied")
			}
			l2, err := b.Renew(ctx, l)
			if err != nil || l2.Term != l.Term {
				t.Fatalf("Renew of the stale lease: %+v, %v; want it renewed", l2, err)
			}
			s.after = func(op, _ string, _ error) error { return lost } // a renewal lost again
			_, _ = b.Renew(ctx, l2)
			s.after = nil
			if err := b.Release(ctx, l2); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if _, err := b.Get(ctx, election); !errors.Is(err, backendkit.ErrNoLease) {
				t.Fatalf("Get after Release of the stale lease: %v, want ErrNoLease", err)
			}
		})
	}
}

// TestLostAcquireResponse: an Acquire whose write was applied but whose
// version the store could not return is a store error, never a second
// write in the same call; the lease is the caller's, and its retry (same
// identity and incarnation) continues it at the same term.
func TestLostAcquireResponse(t *testing.T) {
	s := &fakeStore{}
	b := newBackend(watchless{s})
	s.after = func(string, string, error) error { return caslease.ErrVersionUnknown }
	inc := backendkit.NewIncarnation()
	_, err := b.Acquire(context.Background(), req("a", inc, time.Minute))
	if !errors.Is(err, caslease.ErrVersionUnknown) || errors.Is(err, backendkit.ErrLeaseHeld) {
		t.Fatalf("Acquire: %v, want a store error", err)
	}
	if n := s.Writes(); n != 1 {
		t.Fatalf("%d writes, want 1", n)
	}
	s.after = nil
	cur, err := b.Get(context.Background(), election)
	if err != nil || cur.Holder != "a" {
		t.Fatalf("Get: %+v, %v", cur, err)
	}
	l := mustAcquire(t, b, req("a", inc, time.Minute))
	if l.Term != cur.Term {
		t.Fatalf("retry term %d, want %d", l.Term, cur.Term)
	}
}

// TestReleaseAfterLateRenewalLands: a renewal of the holder's lands
// between Release's read and its write; Release's compare-and-swap loses
// to it, reads again, still finds the leadership and releases it.
func TestReleaseAfterLateRenewalLands(t *testing.T) {
	s := &fakeStore{}
	b := newBackend(watchless{s})
	l := mustAcquire(t, b, req("a", backendkit.NewIncarnation(), time.Minute))
	var once sync.Once
	s.before = func(_, k string, v []byte) {
		once.Do(func() { s.Put(k, value(t, l, false)) }) // the late renewal
	}
	if err := b.Release(context.Background(), l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := b.Get(context.Background(), election); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get: %v, want ErrNoLease", err)
	}
}

// TestRenewAndTransferLoseToAWriteSinceTheRead: Renew and Transfer write
// once; a write that lands between their read and write (here the
// holder's own late renewal) makes them fail with ErrLeaseLost, having
// written nothing.
func TestRenewAndTransferLoseToAWriteSinceTheRead(t *testing.T) {
	for _, op := range []string{"Renew", "Transfer"} {
		t.Run(op, func(t *testing.T) {
			s := &fakeStore{}
			b := newBackend(watchless{s})
			l := mustAcquire(t, b, req("a", backendkit.NewIncarnation(), time.Minute))
			s.before = func(_, k string, _ []byte) { s.Put(k, value(t, l, false)) }
			var err error
			if op == "Renew" {
				_, err = b.Renew(context.Background(), l)
			} else {
				_, err = b.Transfer(context.Background(), l, req("b", backendkit.NewIncarnation(), time.Minute))
			}
			if !errors.Is(err, backendkit.ErrLeaseLost) {
				t.Fatalf("%s: %v, want ErrLeaseLost", op, err)
			}
		})
	}
}

// TestLostRacesInARow: when every write loses to another one (here a
// release written between each read and write), Acquire gives up after a
// few rounds with a store error, neither held nor taken.
func TestLostRacesInARow(t *testing.T) {
	s := &fakeStore{}
	b := newBackend(watchless{s})
	free := fxelection.Lease{Election: election, Holder: "x", Term: 5, Duration: time.Minute}
	s.Put(key, value(t, free, true))
	s.before = func(_, k string, _ []byte) { s.Put(k, value(t, free, true)) }
	_, err := b.Acquire(context.Background(), req("a", "", time.Minute))
	if err == nil || errors.Is(err, backendkit.ErrLeaseHeld) || !strings.Contains(err.Error(), "races in a row") {
		t.Fatalf("Acquire: %v, want lost races", err)
	}
}

// TestTombstoneCreate: on a store with tombstones, Acquire of a deleted key
// writes over exactly the tombstone it read.
func TestTombstoneCreate(t *testing.T) {
	s := &fakeStore{tombstones: true}
	b := newBackend(watchless{s})
	s.Put(key, []byte("x"))
	s.Delete(key)
	var ops []string
	s.before = func(op, _ string, _ []byte) { ops = append(ops, op) }
	mustAcquire(t, b, req("a", "", time.Minute))
	if len(ops) != 1 || ops[0] != "cas" {
		t.Fatalf("writes %v, want one compare-and-swap on the tombstone", ops)
	}
	if _, err := s.Add(context.Background(), key, []byte("y"), 0); !errors.Is(err, caslease.ErrConflict) && !errors.Is(err, caslease.ErrExists) {
		t.Fatalf("Add over a live key: %v", err)
	}
}

// TestHostileRecords: a value that is not a valid record of the election
// is never taken over, renewed or released: Acquire and Get fail with an
// error matching ErrInvalidRecord (not ErrLeaseHeld), Renew with
// ErrLeaseLost, Release returns nil, and the value stays as it was.
func TestHostileRecords(t *testing.T) {
	var vals [][]byte
	vals = append(vals, []byte("\x00garbage"), bytes.Repeat([]byte("x"), backendkit.MaxValueBytes+1))
	for _, r := range electiontest.HostileRecords(election) {
		vals = append(vals, []byte(`{"fxelection_value":1,"released":false,"write":"00","record":`+r+`}`))
	}
	for i, v := range vals {
		s := &fakeStore{}
		b := newBackend(watchless{s})
		ctx := context.Background()
		s.Put(key, v)
		if cur, err := b.Get(ctx, election); err == nil {
			if cur.Election != election || cur.Validate() != nil {
				t.Errorf("value %d: Get accepted %+v", i, cur)
			}
			continue // a valid lease after all (a record the decoder may accept)
		} else if !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("value %d: Get: %v, want ErrInvalidRecord", i, err)
		}
		_, err := b.Acquire(ctx, req("a", "", time.Minute))
		if !errors.Is(err, backendkit.ErrInvalidRecord) || errors.Is(err, backendkit.ErrLeaseHeld) {
			t.Errorf("value %d: Acquire: %v, want ErrInvalidRecord", i, err)
		}
		l := fxelection.Lease{Election: election, Holder: "x", Term: 5, Duration: time.Minute, Version: "1"}
		if _, err := b.Renew(ctx, l); !errors.Is(err, backendkit.ErrLeaseLost) {
			t.Errorf("value %d: Renew: %v, want ErrLeaseLost", i, err)
		}
		if err := b.Release(ctx, l); err != nil {
			t.Errorf("value %d: Release: %v", i, err)
		}
		if e, _ := s.Get(ctx, key); !bytes.Equal(e.Value, v) {
			t.Errorf("value %d was replaced", i)
		}
	}
}

// wrongElection is a Register that returns a record of another election.
type wrongElection struct{ caslease.Register }

func (w wrongElection) Get(ctx context.Context, key, election string) (caslease.Entry, error) {
	e, err := w.Register.Get(ctx, key, election)
	e.Record.Lease.Election = "other"
	return e, err
}

// TestRecordOfAnotherElection: a Register that returns another election's
// record under a key is refused as an invalid record, whatever the
// adapter's decoder checked.
func TestRecordOfAnotherElection(t *testing.T) {
	s := &fakeStore{}
	mustAcquire(t, newBackend(watchless{s}), req("a", "", time.Minute))
	b, err := caslease.New(wrongElection{caslease.Bytes(watchless{s})}, caslease.Options{
		Name: "fake", Key: func(e string) string { return caslease.EscapedKey(testPrefix, e, 0) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(context.Background(), req("b", "", time.Minute)); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Acquire: %v, want ErrInvalidRecord", err)
	}
}

// TestHeldRecordDeletedFromOutside: on a store that keeps records, a
// record this Backend last read held and now finds missing was deleted
// from outside: its holder's identity takes it back at once with a higher
// term; another candidate only after observing the absence for the
// record's full duration. Fake time.
func TestHeldRecordDeletedFromOutside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 10 * time.Second
		s := &fakeStore{caps: caslease.Capabilities{KeepsRecords: true}}
		holder, other := newBackend(watchless{s}), newBackend(watchless{s})
		ctx := context.Background()
		l := mustAcquire(t, holder, req("a", "", d))
		_, err := other.Acquire(ctx, req("b", "", d))
		wantHeld(t, err, "a")
		s.Delete(key)
		_, err = other.Acquire(ctx, req("b", "", d))
		wantHeld(t, err, "a")
		time.Sleep(d - time.Second)
		_, err = other.Acquire(ctx, req("b", "", d))
		wantHeld(t, err, "a")
		time.Sleep(time.Second)
		lb := mustAcquire(t, other, req("b", "", d))
		if lb.Term <= l.Term {
			t.Fatalf("term %d not above the deleted %d", lb.Term, l.Term)
		}

		// The holder's own identity, which read its record held: at once,
		// above the deleted term (fake time stands still: the clock
		// alone would not raise it).
		if _, err := other.Get(ctx, election); err != nil {
			t.Fatal(err)
		}
		s.Delete(key)
		la := mustAcquire(t, other, req("b", "", d))
		if la.Term <= lb.Term {
			t.Fatalf("holder's retake term %d not above %d", la.Term, lb.Term)
		}
	})
}

// TestServerTTLExpiry: on a store with server TTL, an expired record is
// gone and another candidate takes the lease at once; a longer lease than
// the store can express is refused. Fake time.
func TestServerTTLExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 10 * time.Second
		s := &fakeStore{caps: caslease.Capabilities{ServerTTL: true, MaxTTL: time.Hour, MinTTL: time.Second}}
		a, b := newBackend(watchless{s}), newBackend(watchless{s})
		mustAcquire(t, a, req("a", "", d))
		_, err := b.Acquire(context.Background(), req("b", "", d))
		wantHeld(t, err, "a")
		time.Sleep(d)
		mustAcquire(t, b, req("b", "", d))
		if _, err := b.Acquire(context.Background(), req("c", "", 2*time.Hour)); !errors.Is(err, caslease.ErrTTLRange) ||
			!errors.Is(err, backendkit.ErrDurationRange) {
			t.Fatalf("Acquire beyond MaxTTL: %v", err)
		}
		if b.MinLeaseDuration() != time.Second {
			t.Fatalf("MinLeaseDuration %v", b.MinLeaseDuration())
		}
	})
}

// secretStore fails every call with an error naming its secret.
type secretStore struct{ *fakeStore }

const secret = "hunter2-secret"

func (secretStore) Get(context.Context, string) (caslease.ByteEntry, error) {
	return caslease.ByteEntry{}, errors.New("dial tcp: password=" + secret + " refused " + secret)
}

// TestErrorsRedacted: every error leaves the Backend redacted with
// Options.Secrets, named by its operation, through the Backend's
// backendkit.Redacting (its Redact too).
func TestErrorsRedacted(t *testing.T) {
	b2, _ := caslease.New(caslease.Bytes(secretStore{&fakeStore{}}), caslease.Options{
		Name: "fake", Key: func(e string) string { return e }, Secrets: []string{secret},
	})
	ctx := context.Background()
	l := fxelection.Lease{Election: election, Holder: "a", Term: 1, Duration: time.Minute}
	_, err1 := b2.Acquire(ctx, req("a", "", time.Minute))
	_, err2 := b2.Get(ctx, election)
	_, err3 := b2.Renew(ctx, l)
	err4 := b2.Release(ctx, l)
	_, err5 := b2.Transfer(ctx, l, req("b", "", time.Minute))
	err6 := b2.Redact(errors.New("create bucket: " + secret))
	ops := []string{"acquire lease: ", "get lease: ", "renew lease: ", "release lease: ", "transfer lease: ", "create bucket: "}
	for i, err := range []error{err1, err2, err3, err4, err5, err6} {
		if err == nil || strings.Contains(err.Error(), secret) || !strings.HasPrefix(err.Error(), ops[i]) ||
			!strings.Contains(err.Error(), backendkit.Redacted) {
			t.Errorf("error %d: %v, want it redacted and starting %q", i+1, err, ops[i])
		}
	}
}

// TestPushWakesOnReleaseNotRenewal: with a Watcher, a release and a
// hand-over wake the election's subscribers, a renewal does not.
func TestPushWakesOnReleaseNotRenewal(t *testing.T) {
	s := &fakeStore{}
	b := closeOnCleanup(t, newBackend(s))
	woken := make(chan struct{}, 16)
	cancel := b.Subscribe(election, func() { woken <- struct{}{} })
	defer cancel()
	<-woken // the watch is in place (every (re)established watch wakes)
	ctx := context.Background()
	l := mustAcquire(t, b, req("a", "", time.Minute))
	<-woken // the first write the watch sees may be a hand-over
	l, err := b.Renew(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := b.Transfer(ctx, l, req("b", "", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	<-woken // the hand-over
	if len(woken) != 0 {
		t.Fatal("a renewal woke a subscriber")
	}
	if err := b.Release(ctx, lt); err != nil {
		t.Fatal(err)
	}
	<-woken
	s.Delete(key)
	<-woken
}
