package faultinject_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func req(election, id string) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{Election: election, Identity: id, Duration: time.Minute}
}

func TestFailAndPartition(t *testing.T) {
	ctx := context.Background()
	f := faultinject.New(memory.New())
	l, err := f.Acquire(ctx, req("e", "a"))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	f.Fail(backendkit.OpRenew, boom)
	if _, err := f.Renew(ctx, l); !errors.Is(err, boom) {
		t.Fatalf("Renew with a fault = %v, want boom", err)
	}
	if _, err := f.Get(ctx, "e"); err != nil {
		t.Fatalf("Get (no fault) = %v", err)
	}
	f.Fail(backendkit.OpRenew, nil)
	if _, err := f.Renew(ctx, l); err != nil {
		t.Fatalf("Renew after clearing = %v", err)
	}
	f.Partition(true)
	for op, call := range map[string]func() error{
		backendkit.OpAcquire: func() error { _, err := f.Acquire(ctx, req("e", "a")); return err },
		backendkit.OpRenew:   func() error { _, err := f.Renew(ctx, l); return err },
		backendkit.OpGet:     func() error { _, err := f.Get(ctx, "e"); return err },
		backendkit.OpRelease: func() error { return f.Release(ctx, l) },
	} {
		if err := call(); !errors.Is(err, faultinject.ErrInjected) {
			t.Errorf("%s while partitioned = %v, want ErrInjected", op, err)
		}
	}
	f.Partition(false)
	if err := f.Release(ctx, l); err != nil {
		t.Fatalf("Release after healing = %v", err)
	}
	if got := f.Calls(backendkit.OpRenew); got != 3 {
		t.Errorf("Calls(renew) = %d, want 3", got)
	}
	if got := f.BackendName(); got != "memory" {
		t.Errorf("BackendName = %q, want the wrapped backend's", got)
	}
}

func TestHangEndsWithContext(t *testing.T) {
	f := faultinject.New(memory.New())
	f.Hang(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Get(ctx, "e"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get while hanging = %v, want context.Canceled", err)
	}
}

func TestWedgeIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := faultinject.New(memory.New())
		f.Wedge(backendkit.OpGet, true)
		ctx, cancel := context.WithCancel(context.Background())
		var done atomic.Bool
		errc := make(chan error, 1)
		go func() {
			_, err := f.Get(ctx, "e")
			done.Store(true)
			errc <- err
		}()
		cancel()
		synctest.Wait()
		if done.Load() {
			t.Fatal("a wedged Get returned when its context was cancelled")
		}
		f.Wedge(backendkit.OpGet, false)
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Get after unwedging = %v, want its context's error", err)
		}
	})
}

func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := faultinject.New(memory.New())
		f.Delay(time.Second)
		start := time.Now()
		if _, err := f.Get(context.Background(), "e"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Fatalf("Get = %v, want ErrNoLease", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("Get took %v, want the 1s delay", took)
		}
	})
}

func TestPartitionDropsWakeUps(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	f := faultinject.New(mem)
	var woken atomic.Int32
	cancel := f.Subscribe("e", func() { woken.Add(1) })
	defer cancel()
	release := func() {
		l, err := mem.Acquire(ctx, req("e", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	f.Partition(true)
	release()
	if n := woken.Load(); n != 0 {
		t.Fatalf("%d wake-ups while partitioned, want none", n)
	}
	f.Partition(false)
	release()
	if woken.Load() == 0 {
		t.Fatal("no wake-up after healing")
	}
}

func TestBatchBackend(t *testing.T) {
	ctx := context.Background()
	f := faultinject.NewBatch(memory.New())
	a, err := f.Acquire(ctx, req("e1", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Acquire(ctx, req("e2", "a"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range f.RenewBatch(ctx, []fxelection.Lease{a, b}) {
		if r.Err != nil {
			t.Errorf("lease %d: %v", i, r.Err)
		}
	}
	f.Fail(backendkit.OpRenew, faultinject.ErrInjected)
	for i, r := range f.RenewBatch(ctx, []fxelection.Lease{a, b}) {
		if !errors.Is(r.Err, faultinject.ErrInjected) {
			t.Errorf("lease %d with a renew fault: %v, want ErrInjected", i, r.Err)
		}
	}
	if got := f.Calls(backendkit.OpRenew); got != 4 {
		t.Errorf("Calls(renew) = %d, want 4 (one per lease)", got)
	}
}

// The package is for programs too: it must not link package testing.
func TestNoTestingDependency(t *testing.T) {
	// go test puts its own toolchain's bin first on PATH.
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if slices.Contains(strings.Fields(string(out)), "testing") {
		t.Fatal("package faultinject depends on package testing")
	}
}
