package fxelection_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// The docs go doc shows name no unexported identifier of the package.
func TestDocsNameNoUnexported(t *testing.T) {
	doctest.NoUnexportedInDocs(t, ".")
}

// TestDocNumbers: the timing the package doc states is the code's.
// (TestRenewTiming checks the renewal and retry waits on fake time.)
func TestDocNumbers(t *testing.T) {
	const p = 100 * time.Millisecond
	for range 1000 {
		if d := fxelection.FirstRenewal(p); d < p/2 || d >= p {
			t.Fatalf("first renewal after %v, the doc says in [RetryPeriod/2, RetryPeriod) = [%v, %v)", d, p/2, p)
		}
	}
	doctest.DocSays(t, ".",
		"[RetryPeriod/2, RetryPeriod) from its start",
		fmt.Sprintf("a grid of RetryPeriod/%d", fxelection.RenewSlots),
		fmt.Sprintf("batches of up to backendkit.MaxRenewBatch (%d)", backendkit.MaxRenewBatch),
		"min(RetryPeriod, jitter(RetryPeriod/4 × 2^(n−1))), jitter adding up to 20%",
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod of the last renewal", backoff.JitterFactor),
		fmt.Sprintf("up to LeaseDuration + %v × RetryPeriod after the last renewal", 2*backoff.JitterFactor),
	)
}
