package electiontest_test

import (
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
)

// The docs go doc shows name no unexported identifier of the package.
func TestDocsNameNoUnexported(t *testing.T) {
	doctest.NoUnexportedInDocs(t, ".")
}
