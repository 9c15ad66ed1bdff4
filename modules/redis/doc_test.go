package redislease

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults and bounds it states are the code's.
func TestPackageDoc(t *testing.T) {
	if backendkit.MaxTerm != 1<<63-1 {
		t.Errorf("MaxTerm is %d, the doc says 2^63−1", uint64(backendkit.MaxTerm))
	}
	if got := backendkit.Credentials("abc"); len(got) != 0 {
		t.Errorf("a 3-byte user name is redacted (%q); the doc says shorter than 4 bytes are not", got)
	}
	if got := backendkit.Credentials("abcd"); !slices.Equal(got, []string{"abcd"}) {
		t.Errorf("a 4-byte user name is not redacted (%q)", got)
	}
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf("The prefix defaults to %q", DefaultKeyPrefix),
		fmt.Sprintf("prefix: Options.KeyPrefix (default %q)", DefaultKeyPrefix),
		"exact up to backendkit.MaxTerm (2^63−1)",
		"user names shorter than 4 bytes excepted",
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod", backoff.JitterFactor),
	}})
}
