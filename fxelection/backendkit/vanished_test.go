package backendkit_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// TestHeldRecords: a record read held and then missing is decided as that
// record (free at once for its holder, for others only once the absence
// has lasted its duration); a released record, or the backend's own write,
// leaves nothing to wait for.
func TestHeldRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h backendkit.HeldRecords
		var tr backendkit.ExpiryTracker
		held := backendkit.Value{Lease: backendkit.Lease{Election: "e", Holder: "a", Term: 3, Version: "7", Duration: 10 * time.Second}, Write: "w1"}

		if _, exists, _ := h.Absent(&tr, "e", "b"); exists || h.Vanished("e") {
			t.Fatal("nothing read: the record is free")
		}
		h.Saw("e", held)
		if !h.Vanished("e") {
			t.Fatal("a held record read: its absence is a delete from outside")
		}
		cur, exists, _ := h.Absent(&tr, "e", "a")
		if !exists || !cur.Released || cur.Lease.Term != 3 {
			t.Fatalf("for its holder: %+v %v, want the record, released", cur, exists)
		}
		cur, exists, expired := h.Absent(&tr, "e", "b")
		if !exists || cur.Released || cur.Lease.Holder != "a" {
			t.Fatalf("for another: %+v %v, want the held record", cur, exists)
		}
		if expired() {
			t.Fatal("expired at the first sight of the absence")
		}
		time.Sleep(held.Lease.Duration - time.Millisecond)
		if expired() {
			t.Fatal("expired before the absence lasted the record's duration")
		}
		time.Sleep(time.Millisecond)
		if !expired() {
			t.Fatal("not expired once the absence lasted the record's duration")
		}

		released := held
		released.Released = true
		h.Saw("e", released)
		if _, exists, _ := h.Absent(&tr, "e", "b"); exists {
			t.Fatal("a released record read last: its absence is free")
		}
		h.Saw("e", held)
		h.Forget("e")
		if _, exists, _ := h.Absent(&tr, "e", "b"); exists {
			t.Fatal("after the backend's own write: nothing to wait for")
		}
	})
}
