package etcdlease

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults, limits and TTL rounding it states are the
// code's. (TestChaos checks the failover bound on an embedded etcd.)
func TestPackageDoc(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		time.Second: 1, 1500 * time.Millisecond: 2, 15 * time.Second: 15, time.Millisecond: 1,
	} {
		if got := ttlSeconds(d); got != want {
			t.Errorf("ttlSeconds(%v) = %d, want %d (whole seconds, rounded up)", d, got, want)
		}
	}
	if (Options{KeyPrefix: strings.Repeat("a", maxPrefixLen)}).Validate() != nil ||
		(Options{KeyPrefix: strings.Repeat("a", maxPrefixLen+1)}).Validate() == nil {
		t.Errorf("the prefix limit is not %d bytes", maxPrefixLen)
	}
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf("(prefix %q by default)", DefaultKeyPrefix),
		fmt.Sprintf("prefix: Options.KeyPrefix (default %q; printable UTF-8, at most %d bytes)", DefaultKeyPrefix, maxPrefixLen),
		fmt.Sprintf("probes (default %v)", DefaultDialTimeout),
		fmt.Sprintf("at most %d KiB", maxValueBytes>>10),
		fmt.Sprintf("within %v × RetryPeriod after that", backoff.JitterFactor),
		fmt.Sprintf("TTL + revocation + %v × RetryPeriod after the last renewal", backoff.JitterFactor),
	}})
}
