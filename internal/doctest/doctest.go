// Package doctest holds test helpers that keep the docs true to the code:
// README blocks that must show a file verbatim, README settings tables
// that must list exactly a module's settings, and the output of the
// example programs the README shows.
package doctest

import (
	"bytes"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// ReadmeShows checks that the README at readme holds, between the lines
// "<!-- name:begin -->" + "```go" and "```" + "<!-- name:end -->", exactly
// the contents of the file src.
func ReadmeShows(t *testing.T, readme, name, src string) {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- "+name+":begin -->\n```go\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- "+name+":end -->")
	if !ok || !ok2 {
		t.Fatalf("%s has no %s block", readme, name)
	}
	if block != string(code) {
		t.Fatalf("the %s block of %s differs from %s; update the README", name, readme, src)
	}
}

// SettingsTable checks that the README at readme has a table whose header
// starts with "| `moduleID` setting |" and whose first column lists (comma
// separated, in backquotes) exactly the JSON keys of the struct T.
func SettingsTable[T any](t *testing.T, readme, moduleID string) {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	header := "| `" + moduleID + "` setting |"
	_, table, ok := strings.Cut(string(doc), header)
	if !ok {
		t.Fatalf("README has no table starting %q", header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var listed []string
	for _, row := range strings.Split(table, "\n")[2:] {
		first := strings.Split(row, "|")[1]
		for _, k := range strings.Split(first, ",") {
			listed = append(listed, strings.Trim(strings.TrimSpace(k), "`"))
		}
	}
	var keys []string
	rt := reflect.TypeFor[T]()
	for i := range rt.NumField() {
		if tag := rt.Field(i).Tag.Get("json"); tag != "" {
			keys = append(keys, strings.Split(tag, ",")[0])
		}
	}
	slices.Sort(listed)
	slices.Sort(keys)
	if !slices.Equal(listed, keys) {
		t.Fatalf("README lists %v, the module has %v", listed, keys)
	}
}

// Stdout runs f with os.Stdout redirected to a pipe and returns what it
// printed.
func Stdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		done <- b.String()
	}()
	defer func() { os.Stdout = old }()
	f()
	_ = w.Close()
	os.Stdout = old
	return <-done
}
