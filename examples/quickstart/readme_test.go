package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsThisProgram keeps the README's quick start true: it must
// show this file verbatim.
func TestReadmeShowsThisProgram(t *testing.T) {
	doctest.ReadmeShows(t, "../../README.md", "quickstart", "main.go")
}

func TestQuickstartRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	main() // the program ends by itself; -race checks it
}
