package electiontest_test

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection/electiontest"
)

// TestMemoryCounter: the in-process counter, LockOptions.Counter's
// default, fences as a real store does.
func TestMemoryCounter(t *testing.T) {
	electiontest.CheckFencedCounter(t, electiontest.NewMemoryCounter())
}
