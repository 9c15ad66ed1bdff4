package pglease_test

import (
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/storetest"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestWatcher: a watch.Watcher on PostgreSQL sees every change of
// leader (graceful hand-over, stop, cut) within its documented bound.
func TestWatcher(t *testing.T) {
	d := dsn(t)
	storetest.RunWatcherTest(t, func(t *testing.T) fxelection.Backend {
		b, _ := newBackend(t, d, "watch", pglease.Options{})
		return b
	})
}
