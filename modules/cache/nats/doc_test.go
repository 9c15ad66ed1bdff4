package natslease

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults and bounds it states are the code's.
// (TestChaos checks the failover bound on a real nats-server.)
func TestPackageDoc(t *testing.T) {
	if capabilities.ServerTTL {
		t.Error("the store claims server TTL; the doc says observed time")
	}
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf(`default %q),`, DefaultBucket),
		fmt.Sprintf("replicas: the replica count of a bucket it creates, 1 to %d (default %d)", MaxReplicas, DefaultReplicas),
		fmt.Sprintf("prefix: cachelease.Options.KeyPrefix (default %q)", cachelease.DefaultKeyPrefix),
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod of first seeing", backoff.JitterFactor),
		fmt.Sprintf("up to LeaseDuration + %v × RetryPeriod after the leader's last renewal", 2*backoff.JitterFactor),
	}})
}
