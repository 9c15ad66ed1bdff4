package s3lease_test

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults and bounds it states are the code's.
// (TestChaos checks the failover bound on MinIO.)
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{Settings: s3lease.ConfigModule{}, Says: []string{
		fmt.Sprintf("(the prefix defaults to %q", s3lease.DefaultPrefix),
		fmt.Sprintf("prefix: Options.Prefix (default %q)", s3lease.DefaultPrefix),
		fmt.Sprintf("larger than %d KiB (backendkit.MaxValueBytes)", backendkit.MaxValueBytes>>10),
		fmt.Sprintf("within %v × RetryPeriod", backoff.JitterFactor),
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod of first seeing", backoff.JitterFactor),
		fmt.Sprintf("up to LeaseDuration + %v × RetryPeriod after the leader's last renewal", 2*backoff.JitterFactor),
	}})
}
