package redislease

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestTransferRefusals: a Transfer of a lease that is no longer quite the
// caller's changes nothing (record, expiry and term counter as they were,
// no wake-up published) and returns ErrLeaseLost — the lease of an earlier
// acquisition of the same holder and term that has since re-acquired
// without an incarnation (only the nonce differs, as for
// TestStaleReleaseAfterReacquire), the lease of an earlier incarnation,
// a Version that is no nonce, a request for another election, a key of
// another type. A term counter that is not a term, or that has reached
// MaxTerm, refuses too, with the lease still the holder's. The holder's
// current lease then transfers, with one wake-up.
func TestTransferRefusals(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	a := newBackend(t, srv.Addr(), Options{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	leaseKey, termKey := b.Keys(e)
	ps := admin.Subscribe(ctxT(t), b.WakeChannel())
	defer ps.Close()
	if _, err := ps.Receive(ctxT(t)); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	hint := backendkit.AcquireRequest{Election: e, Identity: "succ", Duration: time.Minute, Metadata: map[string]string{"from": "node"}}
	type state struct {
		record, counter string
		pttl            time.Duration
	}
	read := func(t *testing.T) state {
		t.Helper()
		return state{admin.Get(ctxT(t), leaseKey).Val(), admin.Get(ctxT(t), termKey).Val(), admin.PTTL(ctxT(t), leaseKey).Val()}
	}
	refused := func(t *testing.T, l fxelection.Lease, req backendkit.AcquireRequest, want error) {
		t.Helper()
		before := read(t)
		if _, err := b.Transfer(ctxT(t), l, req); !errors.Is(err, want) {
			t.Fatalf("Transfer: %v, want %v", err, want)
		}
		if after := read(t); after.record != before.record || after.counter != before.counter || after.pttl > before.pttl || after.pttl < before.pttl-time.Second {
			t.Fatalf("a refused Transfer changed the keys: %+v, then %+v", before, after)
		}
	}

	req := backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute}
	old, err := a.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := b.Acquire(ctxT(t), req) // same holder and term, another nonce
	if err != nil {
		t.Fatal(err)
	}
	if cur.Term != old.Term || cur.Version == old.Version {
		t.Fatalf("re-acquisition = term %d nonce %q after term %d nonce %q; want the term kept, a new nonce", cur.Term, cur.Version, old.Term, old.Version)
	}
	refused(t, old, hint, backendkit.ErrLeaseLost)
	bad := cur
	bad.Version = "not-a-nonce"
	refused(t, bad, hint, backendkit.ErrLeaseLost)
	other := hint
	other.Election = e + "-other"
	refused(t, cur, other, backendkit.ErrLeaseLost)
	if _, err := b.Transfer(ctxT(t), cur, backendkit.AcquireRequest{Election: e, Duration: time.Minute}); err == nil || errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer to an empty identity: %v, want a request error", err)
	}

	// The counter: a foreign value, then exhausted. The lease stays ours.
	if err := admin.Set(ctxT(t), termKey, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	refused(t, cur, hint, backendkit.ErrInvalidRecord)
	if err := admin.Set(ctxT(t), termKey, strconv.FormatUint(backendkit.MaxTerm, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	refused(t, cur, hint, backendkit.ErrTermExhausted)
	if err := admin.Del(ctxT(t), termKey).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.RPush(ctxT(t), termKey, "foreign").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Transfer(ctxT(t), cur, hint); !errors.Is(err, backendkit.ErrInvalidRecord) || errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer with a list as the counter: %v, want ErrInvalidRecord", err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Holder != "node" || got.Version != cur.Version {
		t.Fatalf("Get after Transfer refused for the counter = %+v, %v; want the lease still node's", got, err)
	}
	if err := admin.Del(ctxT(t), termKey).Err(); err != nil {
		t.Fatal(err)
	}

	// A new incarnation of the holder takes a new term: the earlier
	// incarnation's lease transfers nothing.
	inc1, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()})
	if err != nil {
		t.Fatal(err)
	}
	inc2, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "node", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()})
	if err != nil || inc2.Term <= inc1.Term {
		t.Fatalf("new incarnation's Acquire = %+v, %v; want a term above %d", inc2, err, inc1.Term)
	}
	refused(t, inc1, hint, backendkit.ErrLeaseLost)

	// The current lease transfers, and only that published a wake-up.
	got, err := b.Transfer(ctxT(t), inc2, hint)
	if err != nil || got.Holder != "succ" || got.Term <= inc2.Term {
		t.Fatalf("Transfer of the current lease = %+v, %v; want succ's, above term %d", got, err, inc2.Term)
	}
	msg, err := ps.ReceiveMessage(ctxT(t))
	if err != nil || msg.Payload != e {
		t.Fatalf("wake-up = %+v, %v; want %q", msg, err, e)
	}
	if m, err := ps.ReceiveTimeout(ctxT(t), 300*time.Millisecond); err == nil {
		t.Fatalf("a second wake-up %+v: a refused Transfer published", m)
	}

	// A key of another type is not ours either.
	if err := admin.Del(ctxT(t), leaseKey).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.RPush(ctxT(t), leaseKey, "foreign").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Transfer(ctxT(t), got, hint); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Transfer over a list: %v, want ErrLeaseLost", err)
	}
	if typ := admin.Type(ctxT(t), leaseKey).Val(); typ != "list" {
		t.Fatalf("the lease key is a %s after a refused Transfer, want the list left alone", typ)
	}
}

// TestTransferLostCounter: with the term counter deleted while the lease
// lived, Transfer still gives a term above the released record's (the
// counter is raised to it first, as Acquire does for a live record):
// exactly the next one when the released term is above the server's clock.
// The returned lease is what Get then reads and what Acquire returns: the
// nonce derived from the request's incarnation, so the successor's retry
// with that incarnation keeps the term.
func TestTransferLostCounter(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	{
		{
			b := newBackend(t, srv.Addr(), Options{})
			e := electionName(t)
			leaseKey, termKey := b.Keys(e)
			l := acquire(t, b, e, "node")
			if err := admin.Del(ctxT(t), termKey).Err(); err != nil {
				t.Fatal(err)
			}
			inc := "successor-run-1"
			req := backendkit.AcquireRequest{Election: e, Identity: "succ", Duration: 30 * time.Second, Incarnation: inc, Metadata: map[string]string{"k": "v"}}
			got, err := b.Transfer(ctxT(t), l, req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Term <= l.Term {
				t.Fatalf("Transfer after the counter was deleted: term %d after %d", got.Term, l.Term)
			}
			if c := admin.Get(ctxT(t), termKey).Val(); c != strconv.FormatUint(got.Term, 10) {
				t.Fatalf("counter %q after Transfer, want %d", c, got.Term)
			}
			if got.Election != e || got.Holder != "succ" || got.Incarnation != inc || got.Version != incarnationNonce(inc) ||
				got.Duration != req.Duration || got.Metadata["k"] != "v" || got.AcquiredAt.IsZero() ||
				!got.ExpiresAt.Equal(got.AcquiredAt.Add(req.Duration)) {
				t.Fatalf("Transfer returned %+v", got)
			}
			g, err := b.Get(ctxT(t), e)
			if err != nil || g.Holder != "succ" || g.Term != got.Term || g.Version != got.Version || !g.AcquiredAt.Equal(got.AcquiredAt) || g.Metadata["k"] != "v" {
				t.Fatalf("Get after Transfer = %+v, %v; want the returned %+v", g, err, got)
			}
			if pttl := admin.PTTL(ctxT(t), leaseKey).Val(); pttl <= 20*time.Second || pttl > req.Duration {
				t.Fatalf("PTTL after Transfer = %v, want about %v", pttl, req.Duration)
			}
			again, err := b.Acquire(ctxT(t), req)
			if err != nil || again.Term != got.Term {
				t.Fatalf("the successor's Acquire with the request's incarnation = %+v, %v; want term %d kept", again, err, got.Term)
			}

			// A record whose term is above the server's clock, counter
			// gone: the new term is exactly the next one.
			if err := admin.Del(ctxT(t), termKey).Err(); err != nil {
				t.Fatal(err)
			}
			const term, nonce = 9_000_000_000_000_000, "0123456789abcdef"
			if err := admin.Set(ctxT(t), leaseKey, "fxe2|"+strconv.Itoa(term)+"|4|node|"+nonce+"|60000|0|", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			high, err := b.Get(ctxT(t), e)
			if err != nil || high.Version != nonce || high.Term != term {
				t.Fatalf("Get of the record of term %d = %+v, %v", term, high, err)
			}
			got, err = b.Transfer(ctxT(t), high, req)
			if err != nil || got.Term != term+1 {
				t.Fatalf("Transfer of a record of term %d = %+v, %v; want term %d", term, got, err, term+1)
			}
		}
	}
}

// TestTransferNoScript: Transfer after SCRIPT FLUSH (as after a restart)
// sends its script again in full.
func TestTransferNoScript(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	b := newBackend(t, srv.Addr(), Options{})
	e := electionName(t)
	l := acquire(t, b, e, "node")
	if err := b.client.ScriptFlush(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Transfer(ctxT(t), l, backendkit.AcquireRequest{Election: e, Identity: "succ", Duration: time.Minute}); err != nil {
		t.Fatalf("Transfer after SCRIPT FLUSH: %v", err)
	}
	if exists, err := b.client.ScriptExists(ctxT(t), b.transfer.Hash()).Result(); err != nil || !exists[0] {
		t.Fatalf("SCRIPT EXISTS after Transfer = %v, %v", exists, err)
	}
}
