package linearize_test

import (
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the docs go doc shows name no unexported identifier of
// the package. The checker's own tests (broken backends it must catch) are
// electiontest's linearizable_test.go, which drives it.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{})
}
