package backendkit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// TestCheckAndClaimTransfer: a Transfer's request is checked before any
// read (valid, same election); the record it writes is the successor's,
// with a term above the caller's, whatever the caller's value said.
func TestCheckAndClaimTransfer(t *testing.T) {
	lease := backendkit.Lease{Election: "e", Holder: "a", Incarnation: "i", Term: 7, Duration: time.Second}
	req := backendkit.AcquireRequest{Election: "e", Identity: "b", Duration: 2 * time.Second, Metadata: map[string]string{"k": "v"}}
	if err := backendkit.CheckTransfer(lease, req); err != nil {
		t.Fatalf("CheckTransfer: %v", err)
	}
	other := req
	other.Election = "f"
	if err := backendkit.CheckTransfer(lease, other); !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Errorf("CheckTransfer for another election: %v, want ErrLeaseLost", err)
	}
	bad := req
	bad.Identity = ""
	if err := backendkit.CheckTransfer(lease, bad); err == nil || errors.Is(err, backendkit.ErrLeaseLost) {
		t.Errorf("CheckTransfer of an invalid request: %v, want a validation error", err)
	}
	now := time.Unix(0, 0) // a clock that cannot seed: the term is the caller's + 1
	next, err := backendkit.ClaimTransfer(req, backendkit.Value{Lease: lease}, now)
	if err != nil {
		t.Fatal(err)
	}
	if next.Holder != "b" || next.Incarnation != "" || next.Term != 8 || next.Duration != 2*time.Second || next.Metadata["k"] != "v" {
		t.Fatalf("ClaimTransfer = %+v, want b's record of term 8", next)
	}
	if _, err := backendkit.ClaimTransfer(req, backendkit.Value{Lease: backendkit.Lease{Election: "e", Holder: "a", Term: backendkit.MaxTerm, Duration: time.Second}}, now); !errors.Is(err, backendkit.ErrTermExhausted) {
		t.Errorf("ClaimTransfer at MaxTerm: %v, want ErrTermExhausted", err)
	}
}
