// Package testtier says which tier of the test command a test belongs to,
// and skips it when its tier is not being run.
//
// The test command (scripts/test.sh) runs tiers:
//
//   - default: unit, fake-time and contract tests, a smoke per store. Every
//     test that does not call Require is in it.
//   - e2e: end-to-end features on real electors, example programs, interop.
//   - soak: chaos, pool kills and storms, long runs. Their top-level names
//     start with TestSoak, so that ./scripts/test.sh --soak selects them.
//
// The tiers to run are named, comma-separated, in the environment variable
// FXELECTION_TEST_TIERS (scripts/test.sh sets it); unset, only the default
// tier runs, as for a plain go test. A test outside the tiers being run is
// skipped with a message that starts with SkipPrefix, which
// internal/testreport counts apart from skips for a missing server.
package testtier

import (
	"os"
	"strings"
	"testing"
)

// Tier names a tier of the test command.
type Tier string

// The tiers, in the order the test command knows them.
const (
	Default Tier = "default"
	E2E     Tier = "e2e"
	Soak    Tier = "soak"
)

// Env is the environment variable that names the tiers to run.
const Env = "FXELECTION_TEST_TIERS"

// SkipPrefix starts the message of a test skipped for its tier.
const SkipPrefix = "testtier: "

// Enabled reports whether tier is among the tiers being run.
func Enabled(tier Tier) bool {
	v, ok := os.LookupEnv(Env)
	if !ok || strings.TrimSpace(v) == "" {
		return tier == Default
	}
	for _, f := range strings.Split(v, ",") {
		if Tier(strings.TrimSpace(f)) == tier {
			return true
		}
	}
	return false
}

// Require skips tb unless tier is being run.
func Require(tb testing.TB, tier Tier) {
	tb.Helper()
	if !Enabled(tier) {
		tb.Skipf("%sin the %s tier (%s=%s, or ./scripts/test.sh --%s)", SkipPrefix, tier, Env, tier, tier)
	}
}
