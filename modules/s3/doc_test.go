package s3lease_test

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// The docs go doc shows name no unexported identifier of the package.
func TestDocsNameNoUnexported(t *testing.T) {
	doctest.NoUnexportedInDocs(t, ".")
}

// TestDocSettings: the package doc lists exactly the config module's
// settings.
func TestDocSettings(t *testing.T) {
	doctest.DocSettings[s3lease.ConfigModule](t, ".")
}

// TestDocNumbers: the defaults and bounds the package doc states are the
// code's. (TestChaos checks the failover bound on MinIO.)
func TestDocNumbers(t *testing.T) {
	doctest.DocSays(t, ".",
		fmt.Sprintf("(the prefix defaults to %q", s3lease.DefaultPrefix),
		fmt.Sprintf("prefix: Options.Prefix (default %q)", s3lease.DefaultPrefix),
		fmt.Sprintf("larger than %d KiB (backendkit.MaxValueBytes)", backendkit.MaxValueBytes>>10),
		fmt.Sprintf("within %v × RetryPeriod", backoff.JitterFactor),
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod of first seeing", backoff.JitterFactor),
		fmt.Sprintf("up to LeaseDuration + %v × RetryPeriod after the leader's last renewal", 2*backoff.JitterFactor),
	)
}
