// Package doctest holds test helpers that keep the docs true to the code:
// README blocks that must show a file verbatim or be an excerpt of one
// (and a check that every Go, JSON and YAML block of a README is one of
// the two), README settings tables that must list exactly a module's
// settings, and running the example programs the README shows and reading
// their output.
package doctest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/electiontesting"
)

// ReadmeShows checks that the README at readme holds, between the lines
// "<!-- name:begin -->" + an opening fence ("```go", "```json", …) and
// "```" + "<!-- name:end -->", exactly the contents of the file src.
func ReadmeShows(t *testing.T, readme, name, src string) {
	t.Helper()
	block, code := readBlock(t, readme, name, src)
	if block != code {
		t.Fatalf("the %s block of %s differs from %s; update the README", name, readme, src)
	}
}

// ReadmeExcerpt checks that the README at readme holds a block marked as
// for ReadmeShows whose every non-blank line occurs in the file src, in
// the same order (other lines of src may come between them). Lines are
// compared with leading and trailing white space removed and inner runs
// of white space collapsed, so the excerpt may be aligned differently from
// src (gofmt aligns comments by their neighbours). A line that starts with
// "// …" marks lines left out and is not looked for. A fragment the README
// shows is then always a piece of a program that compiles and runs.
func ReadmeExcerpt(t *testing.T, readme, name, src string) {
	t.Helper()
	block, code := readBlock(t, readme, name, src)
	if err := excerptOf(block, code); err != nil {
		t.Fatalf("the %s block of %s is not an excerpt of %s: %v; update the README", name, readme, src, err)
	}
}

// readBlock returns the marked block name of the README at readme and the
// contents of src.
func readBlock(t *testing.T, readme, name, src string) (block, code string) {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	block, ok := markedBlock(string(doc), name)
	if !ok {
		t.Fatalf("%s has no %s block", readme, name)
	}
	return block, string(data)
}

// markedBlock returns the contents of the fenced block between
// "<!-- name:begin -->" and "<!-- name:end -->" in doc.
func markedBlock(doc, name string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "<!-- "+name+":begin -->\n```")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "\n") // the fence's language
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "```\n<!-- "+name+":end -->")
	return block, ok
}

// excerptOf reports the first line of block that does not occur in src
// after the previous one (see ReadmeExcerpt).
func excerptOf(block, src string) error {
	lines := strings.Split(src, "\n")
	i := 0
	for n, l := range strings.Split(block, "\n") {
		want := normalize(l)
		if want == "" || strings.HasPrefix(want, elision) {
			continue
		}
		for i < len(lines) && normalize(lines[i]) != want {
			i++
		}
		if i == len(lines) {
			return fmt.Errorf("line %d %q is not in it (after the lines before it)", n+1, strings.TrimSpace(l))
		}
		i++
	}
	return nil
}

// elision starts an excerpt's line that stands for lines left out.
const elision = "// …"

// normalize trims l and collapses its runs of white space into one space.
func normalize(l string) string { return strings.Join(strings.Fields(l), " ") }

// Block says how one marked README block is kept true: Src is the file it
// comes from (a path relative to the README's directory, as the README
// links it), and Excerpt whether the block is a fragment of Src (checked
// as by ReadmeExcerpt) or all of it (as by ReadmeShows).
type Block struct {
	Src     string
	Excerpt bool
}

// MaxExcerptLines bounds the non-blank lines of an excerpt: a longer piece
// of a program is better shown whole.
const MaxExcerptLines = 15

// checkedLangs are the fence languages CheckReadme requires a mark for.
var checkedLangs = map[string]bool{"go": true, "json": true, "yaml": true, "yml": true}

// fence is one fenced block of a Markdown document: the line numbers
// (0-based) of its opening and closing fences, and its language.
type fence struct {
	open, close int
	lang        string
}

// fences returns the fenced blocks of the lines of a Markdown document
// (fences may be indented, as in a list item).
func fences(lines []string) []fence {
	var out []fence
	open := -1
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case open < 0 && strings.HasPrefix(l, "```"):
			open = i
		case open >= 0 && l == "```":
			out = append(out, fence{open: open, close: i, lang: strings.TrimPrefix(strings.TrimSpace(lines[open]), "```")})
			open = -1
		}
	}
	return out
}

// CheckReadme keeps every Go, JSON and YAML block of the README at readme
// true to a file in the repository. Each such block must be marked: the
// line "<!-- name:begin -->" right before its opening fence and
// "<!-- name:end -->" right after its closing one, with a name that blocks
// lists. A block is then checked as its entry says: all of Src (as
// ReadmeShows does), or an excerpt of it (as ReadmeExcerpt does) of at
// most MaxExcerptLines non-blank lines whose paragraph just before or just
// after links to Src. Every entry of blocks must mark exactly one block.
// Unmarked blocks, unknown names and unused entries are errors, all
// reported at once.
func CheckReadme(t testing.TB, readme string, blocks map[string]Block) {
	t.Helper()
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(readme)
	lines := strings.Split(string(raw), "\n")
	used := map[string]int{}
	for _, f := range fences(lines) {
		if !checkedLangs[f.lang] {
			continue
		}
		name, ok := mark(lines, f.open-1, "begin")
		if end, ok2 := mark(lines, f.close+1, "end"); !ok || !ok2 || end != name {
			t.Errorf("%s:%d: a %s block without <!-- name:begin --> and <!-- name:end --> marks: show a file of the repository (see doctest.CheckReadme)", readme, f.open+1, f.lang)
			continue
		}
		b, ok := blocks[name]
		if !ok {
			t.Errorf("%s:%d: block %s is not checked: add it to the list", readme, f.open+1, name)
			continue
		}
		used[name]++
		src, err := os.ReadFile(filepath.Join(dir, b.Src))
		if err != nil {
			t.Errorf("%s:%d: block %s: %v", readme, f.open+1, name, err)
			continue
		}
		block := strings.Join(lines[f.open+1:f.close], "\n") + "\n"
		if f.open+1 == f.close {
			block = ""
		}
		if !b.Excerpt {
			if block != string(src) {
				t.Errorf("%s:%d: block %s differs from %s; update the README", readme, f.open+1, name, b.Src)
			}
			continue
		}
		if n := nonBlank(block); n > MaxExcerptLines {
			t.Errorf("%s:%d: excerpt %s has %d lines (at most %d): show all of %s instead", readme, f.open+1, name, n, MaxExcerptLines, b.Src)
		}
		if err := excerptOf(block, string(src)); err != nil {
			t.Errorf("%s:%d: block %s is not an excerpt of %s: %v", readme, f.open+1, name, b.Src, err)
		}
		link := "](" + b.Src + ")"
		if !strings.Contains(paragraph(lines, f.open-2, -1), link) && !strings.Contains(paragraph(lines, f.close+2, 1), link) {
			t.Errorf("%s:%d: excerpt %s: neither the paragraph before nor the one after links to its program (%s)", readme, f.open+1, name, link)
		}
	}
	for name := range blocks {
		if used[name] != 1 {
			t.Errorf("%s: block %s is marked %d times (want 1)", readme, name, used[name])
		}
	}
}

// mark returns the name in lines[i] when it is "<!-- name:kind -->".
func mark(lines []string, i int, kind string) (string, bool) {
	if i < 0 || i >= len(lines) {
		return "", false
	}
	l := strings.TrimSpace(lines[i])
	if !strings.HasPrefix(l, "<!-- ") || !strings.HasSuffix(l, ":"+kind+" -->") {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(l, "<!-- "), ":"+kind+" -->"), true
}

// paragraph returns the lines from lines[i] walking in direction dir
// (-1 up, 1 down), after at most one blank line, up to the next blank line.
func paragraph(lines []string, i, dir int) string {
	if i >= 0 && i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i += dir
	}
	var b strings.Builder
	for ; i >= 0 && i < len(lines) && strings.TrimSpace(lines[i]) != ""; i += dir {
		b.WriteString(lines[i])
		b.WriteByte('\n')
	}
	return b.String()
}

// nonBlank counts the non-blank lines of s.
func nonBlank(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
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

// Program is an example program's run function running in the background:
// run(ctx, out) runs until ctx is done, writing its output to out, and
// returns nil after a clean stop.
type Program struct {
	out  electiontesting.LogBuffer
	stop func() error
}

// StartProgram starts run in the background; the test's cleanup stops it
// (if Stop was not called) and waits for it.
func StartProgram(t testing.TB, run func(ctx context.Context, out io.Writer) error) *Program {
	t.Helper()
	p := &Program{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, &p.out) }()
	p.stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// Output returns what the program wrote so far.
func (p *Program) Output() string { return p.out.String() }

// WaitFor waits up to limit (at least a minute: the wait ends as soon as
// the output is there, so on a busy machine a program is never failed for
// being slow to start) until the program's output contains every one of
// want, and fails t (with the output) otherwise.
func (p *Program) WaitFor(t testing.TB, limit time.Duration, want ...string) {
	t.Helper()
	limit = max(limit, time.Minute)
	electiontesting.WaitFor(t, limit, fmt.Sprintf("output with %q", want), func() bool {
		out := p.out.String()
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	})
}

// LeadThenStop waits (as WaitFor) until the program logs that it leads
// election, stops it, fails t unless it logged losing that leadership on
// the way out, and returns the whole output.
func (p *Program) LeadThenStop(t testing.TB, election string) string {
	t.Helper()
	p.WaitFor(t, electiontesting.LeaderLimit, `msg="leadership acquired" election=`+election)
	out := p.Stop(t)
	if !strings.Contains(out, `msg="leadership lost" election=`+election) {
		t.Errorf("no leadership lost on stop:\n%s", out)
	}
	return out
}

// Stop cancels the program's context, waits for run to return, fails t
// if it returned an error, and returns the program's whole output.
func (p *Program) Stop(t testing.TB) string {
	t.Helper()
	if err := p.stop(); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, p.out.String())
	}
	return p.out.String()
}
