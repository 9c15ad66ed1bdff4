package fxelection_test

import (
	"testing"

	"github.com/fxelection/fxelection/internal/layers"
)

// coreLayers are the package's concerns from the bottom up, each a few
// files: a file refers only to what its own concern or an earlier one
// declares. The engine (the state machine: campaign, lead, renew, step
// down, release) knows the policies only through policy.go's interfaces;
// each policy is a concern of its own above it, and the API that builds
// electors with their policies comes last.
var coreLayers = [][]string{
	// The vocabulary: the backend, events, configuration, callbacks.
	{"doc.go", "spread.go", "backend.go", "events.go", "config.go", "panic.go", "dispatch.go"},
	// Renewals and acquisitions in batches.
	{"batch.go"},
	// The engine.
	{
		"state.go", "term.go", "policy.go", "report.go", "mailbox.go", "push.go", "ops.go", "loop.go",
		"group.go", "lifecycle.go", "status.go",
	},
	// The group's renewals for lease holders outside the engine (locks'
	// keepers: internal/keeper).
	{"renewer.go"},
	// The policies, each in a file of its own.
	{"handover.go"},
	{"defer.go"},
	{"priority.go"},
	{"health.go"},
	{"exitonloss.go"},
	// The API: electors made with their policies, the fx module.
	{"elector.go", "fx.go"},
}

// TestNoUpwardReferences: the core's concerns form layers (coreLayers), so
// that it reads from the bottom up, no two concerns depend on each other,
// and the engine does not depend on any policy.
func TestNoUpwardReferences(t *testing.T) {
	up, err := layers.UpwardGroups(".", coreLayers)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range up {
		t.Error("upward reference: " + u)
	}
}
