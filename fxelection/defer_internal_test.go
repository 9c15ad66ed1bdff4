package fxelection

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// TestDeferPolicy: Defer asks for a look and never lets a deferring
// candidate take a lease that is not its own; a Defer that panics does not
// defer.
func TestDeferPolicy(t *testing.T) {
	if m := (deferPolicy{deferring: func() bool { return true }}).beforeAttempt(nil); m != modeLook {
		t.Errorf("deferring: mode %d, want modeLook", m)
	}
	if m := (deferPolicy{deferring: func() bool { return false }}).beforeAttempt(nil); m != modeAcquire {
		t.Errorf("not deferring: mode %d, want modeAcquire", m)
	}
	if m := (deferPolicy{deferring: func() bool { panic("boom") }}).beforeAttempt(nil); m != modeAcquire {
		t.Errorf("panicking Defer: mode %d, want modeAcquire", m)
	}
	if (deferPolicy{}).afterLook(nil, backendkit.ErrNoLease) {
		t.Error("a deferring candidate may take a free lease")
	}
}
