package redislease

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

func acquireInc(t *testing.T, b *Backend, e, id, inc string) fxelection.Lease {
	t.Helper()
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute, Incarnation: inc})
	if err != nil {
		t.Fatalf("Acquire(%s as %s/%s): %v", e, id, inc, err)
	}
	return l
}

// TestIncarnationNonce: the record's nonce is the incarnation itself when
// it is 16 lowercase hex digits, a hash of it otherwise; Acquire returns the
// incarnation, Renew and RenewBatch keep it, Get returns none (only the
// nonce is stored), and a retry by the same incarnation keeps the term.
func TestIncarnationNonce(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	for _, inc := range []string{backendkit.NewIncarnation(), "pod-7.run_2", "0123456789ABCDEF", strings.Repeat("z", backendkit.MaxIncarnationLen)} {
		t.Run(inc, func(t *testing.T) {
			e := electionName(t)
			l := acquireInc(t, b, e, "a", inc)
			want := incarnationNonce(inc)
			if validNonce(inc) != (want == inc) || !validNonce(want) {
				t.Fatalf("nonce of %q = %q", inc, want)
			}
			if l.Incarnation != inc || l.Version != want {
				t.Fatalf("Acquire: Incarnation %q Version %q, want %q and %q", l.Incarnation, l.Version, inc, want)
			}
			lease, _ := b.Keys(e)
			if v := b.client.Get(ctxT(t), lease).Val(); !strings.HasPrefix(v, "fxe2|"+strconv.FormatUint(l.Term, 10)+"|1|a|"+want+"|") {
				t.Fatalf("record %q does not carry nonce %q", v, want)
			}
			r, err := b.Renew(ctxT(t), l)
			if err != nil || r.Incarnation != inc || r.Version != want {
				t.Fatalf("Renew = %+v, %v", r, err)
			}
			rb := b.RenewBatch(ctxT(t), []fxelection.Lease{l})
			if rb[0].Err != nil || rb[0].Lease.Incarnation != inc || rb[0].Lease.Version != want {
				t.Fatalf("RenewBatch = %+v", rb[0])
			}
			g, err := b.Get(ctxT(t), e)
			if err != nil || g.Incarnation != "" || g.Version != want || g.Term != l.Term {
				t.Fatalf("Get = %+v, %v; want no incarnation, Version %q", g, err, want)
			}
			again := acquireInc(t, b, e, "a", inc)
			if again.Term != l.Term || !again.AcquiredAt.Equal(l.AcquiredAt) || again.Version != want {
				t.Fatalf("retry by the same incarnation = %+v, want term %d kept", again, l.Term)
			}
		})
	}
	// Distinct incarnations get distinct nonces, hashed ones included.
	seen := map[string]string{}
	for _, inc := range []string{"a", "b", "A", "0123456789abcdef", "0123456789abcdeF", "0123456789abcdef0"} {
		n := incarnationNonce(inc)
		if o, dup := seen[n]; dup {
			t.Fatalf("incarnations %q and %q share nonce %q", o, inc, n)
		}
		seen[n] = inc
	}
}

// TestNewIncarnationOverOlderRecords: a record written without an
// incarnation (a random nonce) or by another incarnation is another run's:
// an incarnation of the same identity takes it at once with a higher term,
// and a request naming no incarnation keeps the term.
func TestNewIncarnationOverOlderRecords(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	b := newBackend(t, srv.Addr(), Options{})
	for name, v := range map[string]string{
		"fxe2 random":     "fxe2|7|1|a|9f86d081884c7d65|60000|1700000000000|",
		"fxe2 by another": "fxe2|7|1|a|" + incarnationNonce("other") + "|60000|1700000000000|",
	} {
		t.Run(name, func(t *testing.T) {
			e := electionName(t)
			lease, _ := b.Keys(e)
			set := func() {
				if err := admin.Set(ctxT(t), lease, v, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
			set()
			if l := acquire(t, b, e, "a"); l.Term != 7 {
				t.Fatalf("re-acquire naming no incarnation: term %d, want 7 kept", l.Term)
			}
			set()
			l := acquireInc(t, b, e, "a", backendkit.NewIncarnation())
			if l.Term <= 7 {
				t.Fatalf("new incarnation over %q: term %d, want > 7", v, l.Term)
			}
			if _, err := b.Renew(ctxT(t), fxelection.Lease{Election: e, Holder: "a", Term: 7, Duration: time.Minute}); !errors.Is(err, backendkit.ErrLeaseLost) {
				t.Fatalf("the older run's Renew: %v, want ErrLeaseLost", err)
			}
		})
	}
}

// TestNewIncarnationAboveLostCounter: the term counter was lost while the
// record lived, and the record's term is above the server's clock (so
// neither the counter nor the clock is above it): a new incarnation's term
// is still above the live record's, exactly the next one.
func TestNewIncarnationAboveLostCounter(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	lease, term := b.Keys(e)
	const high = "9000000000000006" // above the clock in microseconds until 2255
	l := acquireInc(t, b, e, "a", backendkit.NewIncarnation())
	if err := b.client.Set(ctxT(t), lease, "fxe2|"+high+"|1|a|"+l.Version+"|60000|0|", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Del(ctxT(t), term).Err(); err != nil {
		t.Fatal(err)
	}
	l2 := acquireInc(t, b, e, "a", backendkit.NewIncarnation())
	if l2.Term != 9000000000000007 {
		t.Fatalf("new incarnation after the counter was lost: term %d, want %s+1 (above the live record's)", l2.Term, high)
	}
	if c := b.client.Get(ctxT(t), term).Val(); c != "9000000000000007" {
		t.Fatalf("counter = %q, want %s+1", c, high)
	}
	// Another identity still waits for the live record.
	var held *backendkit.HeldError
	if _, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()}); !errors.As(err, &held) || held.Holder.Term != l2.Term {
		t.Fatalf("other identity: %v, want a HeldError naming term %d", err, l2.Term)
	}
}

// TestNewIncarnationTermExhausted: a live record at backendkit.MaxTerm
// cannot pass to a new incarnation; the record is left as it is, and its
// own incarnation still keeps it.
func TestNewIncarnationTermExhausted(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	lease, term := b.Keys(e)
	inc := backendkit.NewIncarnation()
	max := strconv.FormatUint(backendkit.MaxTerm, 10)
	v := "fxe2|" + max + "|1|a|" + inc + "|60000|0|"
	if err := b.client.Set(ctxT(t), lease, v, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Set(ctxT(t), term, "3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()})
	if !errors.Is(err, backendkit.ErrTermExhausted) {
		t.Fatalf("new incarnation over MaxTerm: %v, want ErrTermExhausted", err)
	}
	if got := b.client.Get(ctxT(t), lease).Val(); got != v {
		t.Fatalf("record rewritten to %q", got)
	}
	if got := b.client.Get(ctxT(t), term).Val(); got != "3" {
		t.Fatalf("counter rewritten to %q by a refused Acquire", got)
	}
	if l := acquireInc(t, b, e, "a", inc); l.Term != backendkit.MaxTerm {
		t.Fatalf("own incarnation over MaxTerm: term %d", l.Term)
	}
}

// TestRenewDropsSupersededIncarnation: when a request naming no
// incarnation re-acquired the term (a hand-over hint written for a
// successor that held the lease already), Renew still succeeds, with the
// record's nonce, and no longer claims the caller's incarnation.
func TestRenewDropsSupersededIncarnation(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	l := acquireInc(t, b, e, "a", backendkit.NewIncarnation())
	old := acquire(t, b, e, "a")
	if old.Term != l.Term {
		t.Fatalf("re-acquire naming no incarnation: term %d, want %d", old.Term, l.Term)
	}
	r, err := b.Renew(ctxT(t), l)
	if err != nil || r.Incarnation != "" || r.Version != old.Version {
		t.Fatalf("Renew = %+v, %v; want no incarnation and Version %q", r, err, old.Version)
	}
}

// TestInvalidIncarnation: a malformed incarnation is refused before
// anything is written, without quoting it.
func TestInvalidIncarnation(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	for _, inc := range []string{"has space", "\x1b[31m", strings.Repeat("a", backendkit.MaxIncarnationLen+1), "ünï"} {
		_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute, Incarnation: inc})
		if err == nil || strings.Contains(err.Error(), inc) {
			t.Fatalf("Acquire with incarnation %q: %v", inc, err)
		}
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get after refused Acquires: %v, want ErrNoLease", err)
	}
}
