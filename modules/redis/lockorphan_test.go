package redislease

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/lockorphan"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestLockCutAcquireGivenBack: a lock (TryAcquire, Acquire) or semaphore
// slot whose caller's context ends while the winning call's reply is
// delayed by a proxy is not orphaned: another client takes the key long
// before the 30s lease could expire (lockorphan.CutAcquire).
func TestLockCutAcquireGivenBack(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	p, err := electiontest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	lockorphan.CutAcquire(t, lockorphan.Store{
		Proxy:   p,
		Through: newBackend(t, p.Addr(), Options{}),
		Direct:  newBackend(t, srv.Addr(), Options{}),
	}, electionName(t))
}
