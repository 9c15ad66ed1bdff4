package fencedcounter_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/electiontest/fencedcounter"
	"github.com/fxelection/fxelection/internal/doctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPackageDoc: the docs go doc shows name no unexported identifier of
// the package.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{})
}

// TestPrivateRedis: the counter on a Redis of the test's own fences its
// reads and writes (electiontest.CheckFencedCounter).
func TestPrivateRedis(t *testing.T) {
	electiontest.CheckFencedCounter(t, fencedcounter.PrivateRedis(t))
}
