package bloblease

import (
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults and bounds it states are the code's.
// (TestChaos checks the failover bound on Azurite, TestMetaWorstCaseFits
// that every record fits the 8 KiB.)
func TestPackageDoc(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{
		{MinDuration - time.Second, false},
		{MinDuration - time.Second + time.Millisecond, true}, // rounded up to whole seconds
		{MaxDuration, true},
		{MaxDuration + time.Millisecond, false},
	} {
		if _, err := durationSeconds(c.d); (err == nil) != c.ok {
			t.Errorf("lease duration %v accepted: %v, want %v", c.d, err == nil, c.ok)
		}
	}
	lo, hi := int(MinDuration/time.Second), int(MaxDuration/time.Second)
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf("which Azure limits to %ds–%ds", lo, hi),
		fmt.Sprintf("Azure grants %ds to %ds", lo, hi),
		fmt.Sprintf("must be %ds–%ds", lo, hi),
		fmt.Sprintf("poll (%v doubling to %v) for up to %v while", pollMin, pollMax, resolveBudget),
		fmt.Sprintf("(the prefix defaults to %q", DefaultPrefix),
		fmt.Sprintf("prefix: Options.Prefix (default %q)", DefaultPrefix),
		fmt.Sprintf("within %v × RetryPeriod", backoff.JitterFactor),
		fmt.Sprintf("within ceil(LeaseDuration) + %v × RetryPeriod of that renewal", backoff.JitterFactor),
		fmt.Sprintf("all of a blob's metadata to %d KiB", (maxMetaValue+len(MetadataKey))>>10),
		fmt.Sprintf("(its first byte %d;", compactFormat),
		fmt.Sprintf("backendkit.MaxMetadataBytes (%d) of Metadata", backendkit.MaxMetadataBytes),
	}})
}
