package pool_test

import (
	"testing"
	"testing/synctest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestPoolFakeTime runs CheckPool on the in-memory backend in fake time,
// where its bounds hold exactly.
func TestPoolFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		electiontest.CheckPool(t, func(*testing.T) fxelection.Backend { return store }, electiontest.PoolOptions{})
	})
}
