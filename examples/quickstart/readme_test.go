package main

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsThisProgram keeps the README's quick start true: it must
// show this file verbatim.
func TestReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- quickstart:begin -->\n```go\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- quickstart:end -->")
	if !ok || !ok2 {
		t.Fatal("README has no quickstart block")
	}
	if block != string(src) {
		t.Fatal("README quick start differs from examples/quickstart/main.go; update the README")
	}
}

func TestQuickstartRuns(t *testing.T) {
	main() // the program ends by itself; -race checks it
}
