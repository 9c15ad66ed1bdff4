package cachelease

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
)

// The docs go doc shows name no unexported identifier of the package.
func TestDocsNameNoUnexported(t *testing.T) {
	doctest.NoUnexportedInDocs(t, ".")
}

// TestDocNumbers: the defaults the package doc states are the code's.
// (The memcached adapter's doc test checks the 250-byte key limit.)
func TestDocNumbers(t *testing.T) {
	doctest.DocSays(t, ".",
		fmt.Sprintf("Options.KeyPrefix (default %q)", DefaultKeyPrefix),
		fmt.Sprintf("replaced by %q and its SHA-256", hashMark),
	)
}
