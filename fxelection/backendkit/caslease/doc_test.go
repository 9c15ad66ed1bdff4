package caslease_test

import (
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the docs go doc shows name no unexported identifier of
// the package.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{})
}
