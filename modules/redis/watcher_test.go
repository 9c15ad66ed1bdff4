package redislease

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/storetest"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestWatcher: a watch.Watcher on Redis sees every change of leader
// (graceful hand-over, stop, cut) within its documented bound.
func TestWatcher(t *testing.T) {
	addr := newServer(t, testserver.RedisOptions{}).Addr()
	storetest.RunWatcherTest(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, addr, Options{})
	})
}
