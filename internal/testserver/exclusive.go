package testserver

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Exclusive makes the tests that call it with the same name run one at a
// time across the test binaries of one machine (go test runs packages in
// parallel): it takes an exclusive lock on a file in os.TempDir, waiting
// for it, and releases it when t ends. The pool tests use it: each runs
// more than a thousand electors and a store, and two of them at once on a
// two-core machine, beside the other packages, starve each other's
// renewals. The lock is the kernel's (flock), so a killed test binary
// releases it.
func Exclusive(t testing.TB, name string) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "fxelection-exclusive-"+name+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("exclusive %s: %v", name, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		t.Fatalf("exclusive %s: lock %s: %v", name, path, err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	})
}
