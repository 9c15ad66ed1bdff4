package memcachedlease

import (
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the expirations, defaults and bounds it states are the
// code's. (TestChaos checks the failover bound, with LeaseDuration + 2s +
// 2 × RetryPeriod, on a real memcached.)
func TestPackageDoc(t *testing.T) {
	for d, want := range map[time.Duration]int32{
		500 * time.Millisecond:  2,
		time.Second:             2,
		1500 * time.Millisecond: 3,
		MaxLease:                30 * 24 * 60 * 60, // the largest relative expiration
	} {
		if got, err := Expiration(d); err != nil || got != want {
			t.Errorf("Expiration(%v) = %d, %v; the doc says ceil(d/1s)+1 = %d", d, got, err, want)
		}
	}
	if MaxLease != 30*24*time.Hour-time.Second {
		t.Errorf("MaxLease is %v, the doc says 30 days less a second", MaxLease)
	}
	if _, err := Expiration(MaxLease + time.Second); err == nil {
		t.Error("a lease longer than MaxLease is accepted")
	}
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		"stored for ceil(LeaseDuration)+1 s",
		"ceil(d/1s)+1 seconds (Expiration)",
		"a 500ms lease is stored with expiration 2",
		"MaxLease (30 days less a second)",
		fmt.Sprintf("timeout: the socket timeout of each call (default %v", DefaultTimeout),
		fmt.Sprintf("(ConfigModule's default is %v)", DefaultTimeout),
		fmt.Sprintf("(default %q;", cachelease.DefaultKeyPrefix),
		fmt.Sprintf("within %v × RetryPeriod", backoff.JitterFactor),
		fmt.Sprintf("within LeaseDuration + 2s + %v × RetryPeriod", backoff.JitterFactor),
	}})
	// The cache backend's doc states memcached's key limit.
	doctest.DocSays(t, "..", fmt.Sprintf("(memcached: %d bytes)", capabilities.MaxKeyLen))
}
