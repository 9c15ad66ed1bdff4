package fxelection_test

import (
	"testing"

	"github.com/fxelection/fxelection/internal/layers"
)

// coreLayers are the package's files from the bottom up: each refers only
// to what it or a file before it declares.
var coreLayers = []string{
	"doc.go", "redact.go", "spread.go", "backend.go", "events.go", "config.go", "panic.go", "dispatch.go",
	"batch.go", "state.go", "leadctx.go", "report.go", "mailbox.go", "push.go", "ops.go", "handover.go",
	"priority.go", "loop.go", "health.go",
	"group.go", "renewer.go", "lifecycle.go", "elector.go", "fx.go",
}

// TestNoUpwardReferences: the core's files form layers (coreLayers), so
// that it reads from the bottom up and no two files depend on each other.
func TestNoUpwardReferences(t *testing.T) {
	up, err := layers.Upward(".", coreLayers)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range up {
		t.Error("upward reference: " + u)
	}
}
