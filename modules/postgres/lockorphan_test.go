package pglease_test

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/lockorphan"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// orphanStore returns the private server behind a proxy: a backend
// through it and one connected directly. The proxied pool sends each
// statement in one round trip (default_query_exec_mode=exec): pgx's
// default prepares a statement first on each connection, and a prepare
// whose reply is late would keep the statement from ever reaching the
// server.
func orphanStore(t *testing.T) lockorphan.Store {
	t.Helper()
	srv := server(t)
	p, err := electiontest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	through, _ := newBackend(t, "postgres://postgres@"+p.Addr()+"/postgres?sslmode=disable&default_query_exec_mode=exec", "orphan-proxied", pglease.Options{})
	direct, _ := newBackend(t, srv.DSN(), "orphan-direct", pglease.Options{})
	return lockorphan.Store{Proxy: p, Through: through, Direct: direct}
}

// TestLockCutAcquireGivenBack: a lock (TryAcquire, Acquire) or semaphore
// slot whose caller's context ends while the winning statement's reply is
// delayed by a proxy is not orphaned: another client takes the key long
// before the 30s lease could expire (lockorphan.CutAcquire).
func TestLockCutAcquireGivenBack(t *testing.T) {
	lockorphan.CutAcquire(t, orphanStore(t), election(t))
}

// TestLockLateRenewalReleased: a renewal that PostgreSQL applied but whose
// reply came after the renew deadline leaves the Lock's lease behind the
// row's expires_at; Release still frees the key (lockorphan.LateRenewal).
func TestLockLateRenewalReleased(t *testing.T) {
	lockorphan.LateRenewal(t, orphanStore(t), election(t))
}
