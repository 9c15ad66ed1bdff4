package memcachedlease

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// hookConn is a real connection to memcached that counts the storage
// commands written on it and, once armed, runs a hook when the server's
// STORED reply arrives and before the client sees it: another client's
// write lands exactly between a write and the adapter's read-back of its
// CAS id.
type hookConn struct {
	net.Conn
	writes *atomic.Int32
	hook   *func()
	mu     *sync.Mutex
}

func (c hookConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("add ")) || bytes.HasPrefix(p, []byte("cas ")) {
		c.writes.Add(1)
	}
	return c.Conn.Write(p)
}

func (c hookConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && bytes.HasPrefix(p[:n], []byte("STORED\r\n")) {
		c.mu.Lock()
		h := *c.hook
		*c.hook = nil
		c.mu.Unlock()
		if h != nil {
			h()
		}
	}
	return n, err
}

// hookedBackend returns a Backend whose client's connections are
// hookConns, the counter of its storage commands and a function arming
// the hook for the next STORED reply.
func hookedBackend(t *testing.T, addr string) (*cachelease.Backend, *atomic.Int32, func(func())) {
	t.Helper()
	var (
		writes atomic.Int32
		hook   func()
		mu     sync.Mutex
	)
	c := memcache.New(addr)
	c.Timeout = 2 * time.Second
	c.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return hookConn{Conn: nc, writes: &writes, hook: &hook, mu: &mu}, nil
	}
	t.Cleanup(func() { _ = c.Close() })
	b, err := New(c, cachelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	arm := func(h func()) {
		mu.Lock()
		hook = h
		mu.Unlock()
	}
	return b, &writes, arm
}

// TestWriteAccountedFor: memcached's add and cas do not return the new CAS
// id, so the adapter reads it back. When another write lands in between
// (here: the key deleted, as an eviction or flush would, or overwritten),
// the write was still made and may have been seen. The adapter reported
// ErrConflict ("nothing written"): Acquire then wrote a second time and
// returned only that second write (or a HeldError), and Renew reported
// ErrLeaseLost for a renewal that was stored, so Get showed versions no
// call's result accounted for. Now the call makes exactly one write and
// reports a store error matching cachelease.ErrVersionUnknown.
func TestWriteAccountedFor(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	admin := newClient(t, srv.Addr())
	b, writes, arm := hookedBackend(t, srv.Addr())
	e := electionName(t)
	req := backendkit.AcquireRequest{Election: e, Identity: "a", Incarnation: backendkit.NewIncarnation(), Duration: time.Minute}

	arm(func() { _ = admin.Delete(b.Key(e)) })
	l, err := b.Acquire(ctxT(t), req)
	if n := writes.Load(); n != 1 {
		t.Fatalf("Acquire made %d writes (result %+v, %v), want 1", n, l, err)
	}
	var held *backendkit.HeldError
	if !errors.Is(err, cachelease.ErrVersionUnknown) || errors.As(err, &held) || errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Acquire whose add was deleted before its read-back: %+v, %v; want a store error matching ErrVersionUnknown", l, err)
	}

	// A renewal overwritten before its read-back by a value of another
	// holder (any other write shows the same).
	writes.Store(0)
	l, err = b.Acquire(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	other := newBackend(t, srv.Addr(), cachelease.Options{})
	arm(func() {
		_ = admin.Delete(b.Key(e))
		if _, err := other.Acquire(context.Background(), backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute}); err != nil {
			t.Error(err)
		}
	})
	_, err = b.Renew(ctxT(t), l)
	if n := writes.Load(); n != 2 {
		t.Fatalf("Acquire and Renew made %d writes, want 2", n)
	}
	if !errors.Is(err, cachelease.ErrVersionUnknown) || errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("Renew whose cas was replaced before its read-back: %v; want a store error matching ErrVersionUnknown, not ErrLeaseLost", err)
	}
	// Without interference every returned version is the stored one.
	writes.Store(0)
	got, err := other.Get(ctxT(t), e)
	if err != nil || got.Holder != "b" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	it, err := admin.Get(b.Key(e))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != formatCAS(it.CasID) {
		t.Fatalf("Get's version %s, stored %d", got.Version, it.CasID)
	}
}

// TestCallsReturnAtContextDone: gomemcache has no context support; a call
// on a connection that stalls (a partitioned server) returned only at the
// client's Timeout, so a leader learned of the loss late. Every Store call
// now returns at ctx.Done; the abandoned gomemcache call ends by itself at
// the client's Timeout (here the proxy is closed at the end, which ends it
// at once).
func TestCallsReturnAtContextDone(t *testing.T) {
	srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
	p, err := electiontest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	c := memcache.New(p.Addr())
	c.Timeout = 20 * time.Second // far longer than any bound checked here
	defer func() { _ = c.Close() }()
	b, err := New(c, cachelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := electionName(t)
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p.Partition()
	for name, op := range map[string]func(ctx context.Context) error{
		"Renew": func(ctx context.Context) error { _, err := b.Renew(ctx, l); return err },
		"Get":   func(ctx context.Context) error { _, err := b.Get(ctx, e); return err },
		"Acquire": func(ctx context.Context) error {
			_, err := b.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: "b", Duration: time.Minute})
			return err
		},
		"Release": func(ctx context.Context) error { return b.Release(ctx, l) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := op(ctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a stalled connection: %v, want the context's error", name, err)
		}
		if took > 10*time.Second { // generous: the client's Timeout is 20 s
			t.Errorf("%s returned %v after its 200ms context, at the client's Timeout", name, took)
		}
	}
}

func formatCAS(id uint64) string { return strconv.FormatUint(id, 10) }
