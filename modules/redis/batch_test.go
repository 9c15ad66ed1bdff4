package redislease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestRenewBatchScriptsFlushed checks that a batch still renews after the
// server forgot the scripts (SCRIPT FLUSH, as after a restart): the NOSCRIPT
// replies are sent again in full. A lease whose key now holds another type
// is reported lost (and invalid) while the others in the batch renew.
func TestRenewBatchScriptsFlushed(t *testing.T) {
	srv := newServer(t, testserver.RedisOptions{})
	admin := newClient(t, srv.Addr())
	b := newBackend(t, srv.Addr(), Options{})
	req := func(e string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute}
	}
	var leases []fxelection.Lease
	for _, e := range []string{"flush-0", "flush-1", "flush-2"} {
		l, err := b.Acquire(ctxT(t), req(e))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	if err := admin.ScriptFlush(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	lease1, _ := b.Keys("flush-1")
	if err := admin.Del(ctxT(t), lease1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.RPush(ctxT(t), lease1, "foreign").Err(); err != nil {
		t.Fatal(err)
	}
	res := b.RenewBatch(ctxT(t), leases)
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for _, i := range []int{0, 2} {
		if res[i].Err != nil || res[i].Lease.Term != leases[i].Term {
			t.Fatalf("lease %d: %+v, %v", i, res[i].Lease, res[i].Err)
		}
	}
	if err := res[1].Err; !errors.Is(err, backendkit.ErrLeaseLost) || !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("lease on a foreign key: %v, want ErrLeaseLost and ErrInvalidRecord", err)
	}
}
