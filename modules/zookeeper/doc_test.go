package zklease

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults and limits it states are the code's.
// (TestHolderSideExpiry and TestPartitionedLeader check the two expiry
// paths on a real ZooKeeper.)
func TestPackageDoc(t *testing.T) {
	if (Options{Prefix: "/" + strings.Repeat("a", maxPrefixLen-1)}).Validate() != nil ||
		(Options{Prefix: "/" + strings.Repeat("a", maxPrefixLen)}).Validate() == nil {
		t.Errorf("the prefix limit is not %d bytes", maxPrefixLen)
	}
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf("(prefix %q by default", DefaultPrefix),
		fmt.Sprintf("prefix: Options.Prefix (default %q)", DefaultPrefix),
		fmt.Sprintf("session_timeout: the session timeout asked for (default %v, between %v and %s)", DefaultSessionTimeout, minSessionSetting, strings.TrimSuffix(maxSessionSetting.String(), "0s")),
		fmt.Sprintf("data over %d KiB", maxRecordBytes>>10),
		fmt.Sprintf("within %v × RetryPeriod after that", backoff.JitterFactor),
		fmt.Sprintf("session timeout + tickTime + %v × RetryPeriod after the crash", backoff.JitterFactor),
		fmt.Sprintf("LeaseDuration + %v × RetryPeriod after its last renewal", backoff.JitterFactor),
	}})
}
