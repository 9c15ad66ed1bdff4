package featuretest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/featuretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMemory runs every feature case on the in-memory backend under fake
// time: with push wake-up, Transfer and batches, and without any of them
// (where a hand-over may move leadership twice and bystanders defer).
func TestMemory(t *testing.T) {
	t.Run("Full", func(t *testing.T) { featuretest.RunMemory(t, false) })
	t.Run("Plain", func(t *testing.T) { featuretest.RunMemory(t, true) })
}

// TestPackageDoc: the docs go doc shows name no unexported identifier of
// the package.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{})
}
