package cachelease

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"

	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the defaults the package doc states are the code's.
// (The memcached adapter's doc test checks the 250-byte key limit.)
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{Says: []string{
		fmt.Sprintf("Options.KeyPrefix (default %q)", DefaultKeyPrefix),
		fmt.Sprintf("replaced by %q and its SHA-256", caslease.HashMark),
	}})
}
