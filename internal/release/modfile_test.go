package main

import (
	"errors"
	"testing"
)

const nestedGoMod = "module github.com/fxelection/fxelection/modules/etcd\n" +
	"\n" +
	"go 1.26.8\n" +
	"\n" +
	"replace github.com/fxelection/fxelection => ../..\n" +
	"\n" +
	"replace github.com/fxelection/fxelection v0.1.0 => ../../old // pinned\n" +
	"\n" +
	"exclude github.com/fxelection/fxelection v0.0.1\n" +
	"\n" +
	"require github.com/fxelection/fxelection/modules/other v0.0.0-00010101000000-000000000000\n" +
	"\n" +
	"require (\n" +
	"\tgithub.com/fxelection/fxelection v0.0.0-00010101000000-000000000000\n" +
	"\tgithub.com/fxelection/fxelection-extra v0.3.0\n" +
	"\tgo.uber.org/fx v1.24.0\n" +
	")\n" +
	"\n" +
	"require (\n" +
	"\t\"github.com/fxelection/fxelection/modules/quoted\" v0.1.0 // indirect\r\n" +
	"\tgithub.com/fxelection/fxelection/modules/indirect v0.2.0 // indirect\n" +
	")\n"

const nestedGoModReleased = "module github.com/fxelection/fxelection/modules/etcd\n" +
	"\n" +
	"go 1.26.8\n" +
	"\n" +
	"replace github.com/fxelection/fxelection => ../..\n" +
	"\n" +
	"replace github.com/fxelection/fxelection v0.1.0 => ../../old // pinned\n" +
	"\n" +
	"exclude github.com/fxelection/fxelection v0.0.1\n" +
	"\n" +
	"require github.com/fxelection/fxelection/modules/other v0.4.0\n" +
	"\n" +
	"require (\n" +
	"\tgithub.com/fxelection/fxelection v0.4.0\n" +
	"\tgithub.com/fxelection/fxelection-extra v0.3.0\n" +
	"\tgo.uber.org/fx v1.24.0\n" +
	")\n" +
	"\n" +
	"require (\n" +
	"\t\"github.com/fxelection/fxelection/modules/quoted\" v0.4.0 // indirect\r\n" +
	"\tgithub.com/fxelection/fxelection/modules/indirect v0.4.0 // indirect\n" +
	")\n"

// TestRewriteRequires: only requirements of the named modules change, in
// single-line directives and blocks, quoted or not, comments and line
// endings kept; replace and exclude lines, other modules and paths sharing
// a prefix stay; a second rewrite changes nothing.
func TestRewriteRequires(t *testing.T) {
	paths := map[string]bool{
		"github.com/fxelection/fxelection":                  true,
		"github.com/fxelection/fxelection/modules/other":    true,
		"github.com/fxelection/fxelection/modules/quoted":   true,
		"github.com/fxelection/fxelection/modules/indirect": true,
	}
	got, n, err := rewriteRequires([]byte(nestedGoMod), paths, "v0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != nestedGoModReleased || n != 4 {
		t.Fatalf("rewriteRequires changed %d:\n%s\nwant 4:\n%s", n, got, nestedGoModReleased)
	}
	again, n, err := rewriteRequires(got, paths, "v0.4.0")
	if err != nil || n != 0 || string(again) != nestedGoModReleased {
		t.Fatalf("second rewrite: %d changes, %v", n, err)
	}
}

func TestRewriteRequiresErrors(t *testing.T) {
	paths := map[string]bool{"example.com/root": true}
	for name, text := range map[string]string{
		"no version":   "module example.com/a\n\nrequire example.com/root\n",
		"open block":   "module example.com/a\n\nrequire (\n\texample.com/root v1.0.0\n",
		"bad quote":    "module example.com/a\n\nrequire \"example.com/root v1.0.0\n",
		"block no ver": "module example.com/a\n\nrequire (\n\texample.com/root // indirect\n)\n",
	} {
		if _, _, err := rewriteRequires([]byte(text), paths, "v1.1.0"); !errors.Is(err, errGoMod) {
			t.Errorf("%s: err = %v, want errGoMod", name, err)
		}
	}
	// An empty block on one line is not an open block.
	text := "module example.com/a\n\nrequire ()\n\nrequire example.com/root v1.0.0\n"
	got, n, err := rewriteRequires([]byte(text), paths, "v1.1.0")
	if err != nil || n != 1 || string(got) != "module example.com/a\n\nrequire ()\n\nrequire example.com/root v1.1.0\n" {
		t.Errorf("empty block: %q, %d, %v", got, n, err)
	}
}

func TestModulePath(t *testing.T) {
	for text, want := range map[string]string{
		"module example.com/a\n":                             "example.com/a",
		"// comment\nmodule \"example.com/q\" // trailing\n": "example.com/q",
		"\n\tmodule   example.com/b\r\ngo 1.26\n":            "example.com/b",
	} {
		if got, err := modulePath([]byte(text)); err != nil || got != want {
			t.Errorf("modulePath(%q) = %q, %v, want %q", text, got, err, want)
		}
	}
	for _, text := range []string{"", "go 1.26\n", "module (\n\texample.com/a\n)\n"} {
		if _, err := modulePath([]byte(text)); !errors.Is(err, errGoMod) {
			t.Errorf("modulePath(%q) = %v, want errGoMod", text, err)
		}
	}
}
