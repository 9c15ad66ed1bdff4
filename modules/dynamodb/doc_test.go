package ddblease

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the names, limits and bounds it states are the code's.
func TestPackageDoc(t *testing.T) {
	if maxVersion != 1<<63-2 {
		t.Errorf("maxVersion is %d, the doc says 2^63−2", uint64(maxVersion))
	}
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf("partition key is the string attribute %q (KeyAttribute)", KeyAttribute),
		fmt.Sprintf("%q (ValueAttribute), a string", ValueAttribute),
		fmt.Sprintf("%q (VersionAttribute), a number", VersionAttribute),
		fmt.Sprintf("larger than %d KiB (backendkit.MaxValueBytes)", backendkit.MaxValueBytes>>10),
		fmt.Sprintf("within %v × RetryPeriod", backoff.JitterFactor),
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod of first seeing", backoff.JitterFactor),
		fmt.Sprintf("up to LeaseDuration + %v × RetryPeriod after the leader's last renewal", 2*backoff.JitterFactor),
	}})
}
