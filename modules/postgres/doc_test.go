package pglease

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/modules/postgres/internal/pgident"
)

// TestPackageDoc: the package doc lists exactly the config module's
// settings, and the defaults and bounds it states are the code's.
func TestPackageDoc(t *testing.T) {
	if !pgident.Valid(strings.Repeat("a", 63)) || pgident.Valid(strings.Repeat("a", 64)) {
		t.Error("identifiers are not limited to 63 bytes, as the doc says")
	}
	attempts := map[int]string{2: "two", 3: "three", 4: "four", 5: "five"}[maxAcquireAttempts]
	doctest.CheckPackageDoc(t, doctest.Want{Settings: ConfigModule{}, Says: []string{
		fmt.Sprintf("Acquire may run its statement up to %s times", attempts),
		fmt.Sprintf("(%v doubling to %v, jittered)", listenBackoffMin, listenBackoffMax),
		fmt.Sprintf("table: Options.Table (default %q)", DefaultTable),
		fmt.Sprintf("channel: Options.Channel (default %q)", DefaultChannel),
		fmt.Sprintf("(default %v, never past fx's stop deadline)", DefaultCloseTimeout),
		"at most 63 bytes",
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod", backoff.JitterFactor),
	}})
}
