package electiontesting

import (
	"context"
	"errors"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// GuardedWrite makes one write through a fencing guard with the token
// fence.FromContext finds in ctx, and returns the guard's error (matching
// fence.ErrStaleTerm when the guard refused it).
type GuardedWrite func(ctx context.Context) error

// RunTokenPrecedence checks, through a real guard's write, that the token a
// guard reads from a lock's or a leadership's context is that lock's or
// leadership's own, whatever token the caller's context carried: a holder
// that lost its lock or leadership has its late write refused once its
// successor wrote, even when it took the lock (or ran the leader work) in a
// context made with fence.WithToken (a queued job's token). Elections and
// locks run on the in-memory backend; names start with election(t).
func RunTokenPrecedence(t *testing.T, write GuardedWrite) {
	// The token a job carries from its enqueuer: for the same name, and
	// higher than any term the lock or leadership gets here.
	const jobTerm = 1 << 40
	t.Run("LockInTokenContext", func(t *testing.T) {
		ctx := Context(t)
		key := Election(t)
		b := memory.New()
		la, lb := newLocker(t, b, "a"), newLocker(t, b, "b")
		job := fence.WithToken(ctx, fence.Token{Election: key, Term: jobTerm})
		lk, err := la.TryAcquire(job, key)
		if err != nil {
			t.Fatal(err)
		}
		checkLate(t, write, lk.Context(), fence.Token{Election: key, Term: lk.Term()}, func() {
			if err := lk.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, func() (context.Context, func()) {
			next, err := lb.TryAcquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			return next.Context(), func() { _ = next.Release(ctx) }
		})
	})
	t.Run("RunIfLeaderInTokenContext", func(t *testing.T) {
		ctx := Context(t)
		name := Election(t)
		b := memory.New()
		a := startElector(t, b, name, "a")
		if ok, err := a.TryAcquire(ctx); !ok || err != nil {
			t.Fatalf("a leads: %v %v", ok, err)
		}
		bb := startElector(t, b, name, "b")
		job := fence.WithToken(ctx, fence.Token{Election: name, Term: jobTerm})
		var held context.Context
		var term uint64
		if ran, err := a.RunIfLeader(job, func(lctx context.Context) error {
			held = context.WithoutCancel(lctx)
			l, _ := fxelection.LeaseFromContext(lctx)
			term = l.Term
			return nil
		}); !ran || err != nil {
			t.Fatalf("RunIfLeader: %v %v", ran, err)
		}
		checkLate(t, write, held, fence.Token{Election: name, Term: term}, func() {
			if err := a.Resign(ctx); err != nil {
				t.Fatal(err)
			}
		}, func() (context.Context, func()) {
			if ok, err := bb.TryAcquire(ctx); !ok || err != nil {
				t.Fatalf("b leads: %v %v", ok, err)
			}
			var next context.Context
			if ran, err := bb.RunIfLeader(ctx, func(lctx context.Context) error {
				next = context.WithoutCancel(lctx)
				return nil
			}); !ran || err != nil {
				t.Fatalf("b RunIfLeader: %v %v", ran, err)
			}
			return next, func() {}
		})
	})
	t.Run("LockInsideRunIfLeader", func(t *testing.T) {
		ctx := Context(t)
		name := Election(t)
		b := memory.New()
		e := startElector(t, b, name, "e")
		if ok, err := e.TryAcquire(ctx); !ok || err != nil {
			t.Fatalf("leads: %v %v", ok, err)
		}
		la, lb := newLocker(t, b, "a"), newLocker(t, b, "b")
		key := name + "-lock"
		var lk *lock.Lock
		if ran, err := e.RunIfLeader(ctx, func(lctx context.Context) error {
			var err error
			lk, err = la.TryAcquire(lctx, key)
			return err
		}); !ran || err != nil {
			t.Fatalf("RunIfLeader: %v %v", ran, err)
		}
		checkLate(t, write, lk.Context(), fence.Token{Election: key, Term: lk.Term()}, func() {
			if err := lk.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, func() (context.Context, func()) {
			next, err := lb.TryAcquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			return next.Context(), func() { _ = next.Release(ctx) }
		})
	})
}

// checkLate checks that held's token is want, writes with it, ends the
// holding (end), has the successor write (next), and then checks that a
// late write with held's values is refused.
func checkLate(t *testing.T, write GuardedWrite, held context.Context, want fence.Token, end func(), next func() (context.Context, func())) {
	t.Helper()
	late := context.WithoutCancel(held) // a paused holder's write: its values, no cancellation
	tok, err := fence.FromContext(late)
	if err != nil {
		t.Fatal(err)
	}
	if tok != want {
		t.Errorf("the guard reads token %+v, the holding's is %+v", tok, want)
	}
	if err := write(late); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	end()
	nctx, done := next()
	defer done()
	if err := write(nctx); err != nil {
		t.Fatalf("the successor's write: %v", err)
	}
	if err := write(late); !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatalf("the former holder's late write: %v, want ErrStaleTerm", err)
	}
}

func newLocker(t *testing.T, b fxelection.Backend, identity string) *lock.Locker {
	t.Helper()
	l, err := lock.New(b, lock.Options{Identity: identity})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

func startElector(t *testing.T, b fxelection.Backend, name, identity string) *fxelection.Elector {
	t.Helper()
	e, err := fxelection.New(fxelection.Config{Name: name, Identity: identity}, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}
