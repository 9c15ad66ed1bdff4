package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExcerptOf(t *testing.T) {
	src := "a := 1 // one\nif a > 0 {\n\tb := 2\n\t_ = b\n}\nc := 3\n"
	for _, tt := range []struct {
		block string
		ok    bool
	}{
		{"a  :=  1   // one\n\n  c := 3\n", true},      // white space differs, lines skipped
		{"if a > 0 {\n\t// … more\n}\nc := 3\n", true}, // an elision line
		{"c := 3\na := 1 // one\n", false},             // out of order
		{"a := 1\n", false},                            // a line cut short
		{"d := 4\n", false},
	} {
		if err := excerptOf(tt.block, src); (err == nil) != tt.ok {
			t.Errorf("excerptOf(%q) = %v, want ok %v", tt.block, err, tt.ok)
		}
	}
}

// recorder keeps what CheckReadme reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckReadme runs CheckReadme on a small README with each kind of
// problem.
func TestCheckReadme(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", "package main\n\nfunc main() {\n\tprintln(1)\n}\n")
	write("doc.json", "{\"a\": 1}\n")
	readme := strings.Join([]string{
		"# Title",
		"",
		"<!-- whole:begin -->",
		"```go",
		"package main",
		"",
		"func main() {",
		"\tprintln(1)",
		"}",
		"```",
		"<!-- whole:end -->",
		"",
		"From [main.go](main.go):",
		"",
		"<!-- part:begin -->",
		"```go",
		"println(1)",
		"```",
		"<!-- part:end -->",
		"",
		"<!-- nolink:begin -->",
		"```go",
		"println(1)",
		"```",
		"<!-- nolink:end -->",
		"",
		"<!-- stale:begin -->",
		"```json",
		"{\"a\": 2}",
		"```",
		"<!-- stale:end -->",
		"",
		"```yaml",
		"a: 1",
		"```",
		"",
		"```sh",
		"echo not checked",
		"```",
		"",
		"<!-- unknown:begin -->",
		"```go",
		"x",
		"```",
		"<!-- unknown:end -->",
		"",
	}, "\n")
	write("README.md", readme)
	r := &recorder{TB: t}
	CheckReadme(r, filepath.Join(dir, "README.md"), map[string]Block{
		"whole":  {Src: "main.go"},
		"part":   {Src: "main.go", Excerpt: true},
		"nolink": {Src: "main.go", Excerpt: true},
		"stale":  {Src: "doc.json"},
		"unused": {Src: "main.go"},
	})
	want := []string{
		"excerpt nolink: neither the paragraph before nor the one after links to its program",
		"block stale differs from doc.json",
		"a yaml block without <!-- name:begin -->",
		"block unknown is not checked",
		"block unused is marked 0 times",
	}
	if len(r.errs) != len(want) {
		t.Fatalf("errors:\n%s", strings.Join(r.errs, "\n"))
	}
	for _, w := range want {
		found := false
		for _, e := range r.errs {
			found = found || strings.Contains(e, w)
		}
		if !found {
			t.Errorf("no error with %q in:\n%s", w, strings.Join(r.errs, "\n"))
		}
	}
}
