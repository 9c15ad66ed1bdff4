package fencedcounter_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/fencedcounter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPackageDoc: the docs go doc shows name no unexported identifier of
// the package.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{})
}

// TestPrivateRedis: the counter on a Redis of the test's own fences its
// reads and writes.
func TestPrivateRedis(t *testing.T) {
	fencedcounter.Check(t, fencedcounter.PrivateRedis(t))
}

// TestMemory: the in-process counter fences as a real store does.
func TestMemory(t *testing.T) {
	fencedcounter.Check(t, fencedcounter.NewMemory())
}
