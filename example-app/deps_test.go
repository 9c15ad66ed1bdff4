package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryDoesNotLinkTesting: the shipped program links no test code.
// Package testing registers its flags and brings its runtime hooks; a
// program gets it by importing a test-helper package (electiontest), which
// is why the demo's fault injection comes from faultinject.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	// go test puts its own toolchain's bin first on PATH.
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var importers []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == "testing" {
			continue
		}
		if slices.Contains(strings.Fields(imports), "testing") {
			importers = append(importers, pkg)
		}
	}
	if len(importers) > 0 {
		t.Fatalf("example-app links package testing, imported by %s", strings.Join(importers, ", "))
	}
	if !strings.Contains(string(out), "github.com/fxelection/fxelection/fxelection\n") && !strings.Contains(string(out), "github.com/fxelection/fxelection/fxelection ") {
		t.Fatalf("go list -deps did not list the program's dependencies:\n%s", out)
	}
}
