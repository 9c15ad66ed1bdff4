// Command testreport summarises the test command's output for a person
// watching it: it reads a stream that mixes plain lines (phase headers,
// gofmt and vet output) with `go test -json` events, prints plain lines as
// they come, prints a package's verdict when it ends and a failed test's
// output when it fails, prints a progress line whenever nothing else was
// printed for -every (30 s by default), and ends with the failed tests and
// the line "N passed, N failed, N skipped", its last line, after the ten
// slowest packages and top-level tests. A test skipped
// because its tier is not being run (internal/testtier) is not a skip: the
// line then ends "(N in tiers not run)".
//
// Counts are of tests, subtests included, not of packages; a test that
// failed only because a subtest did is not counted again. A package that
// fails outside any test (a build error, a panic, a leak found by TestMain,
// a timeout) counts as one failed test named after the package. A line
// "##testreport fail NAME" (written by the script when a phase that runs no
// tests fails, such as gofmt) counts as one failure named NAME.
//
// It exits 1 when anything failed or when the stream held no test at all,
// so `set -o pipefail` in the script carries the verdict.
//
//	go test -json ./... 2>&1 | go run ./internal/testreport
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fxelection/fxelection/internal/testtier"
)

func main() {
	every := flag.Duration("every", 30*time.Second, "print a progress line when nothing was printed for this long")
	flag.Parse()
	r := newReport(os.Stdout, time.Now)
	stop := r.ticker(*every)
	err := r.read(os.Stdin)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
	}
	if !r.finish() || err != nil {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus the
// build events Go 1.24 added).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
}

// maxKept bounds the output kept per running test: a failure shows its last
// maxKept lines, which is where the verdict is.
const maxKept = 400

type test struct {
	out     []string
	dropped int
}

func (t *test) add(line string) {
	if len(t.out) == maxKept {
		t.out = t.out[1:]
		t.dropped++
	}
	t.out = append(t.out, line)
}

type pkg struct {
	started time.Time
	tests   map[string]*test // running tests, by name
	output  test             // lines outside any test
	failed  bool             // a test in it failed
}

// timing is how long a package or a top-level test ran.
type timing struct {
	name    string
	elapsed float64
}

// slowest is how many packages and tests the closing lists name.
const slowest = 10

type report struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	start   time.Time
	printed time.Time // when anything was last printed
	pkgs    map[string]*pkg
	build   map[string]*test // build output by import path
	passed  int
	skipped int
	// elapsed holds each ended package's time and each ended top-level
	// test's, for the slowest lists at the end.
	pkgTimes, testTimes []timing
	// otherTier counts the tests skipped because their tier is not being
	// run (internal/testtier): not skips, since no server was missing.
	otherTier int
	failures  []string
	anyTest   bool
	// phaseFailures is len(failures) when the current phase started.
	phaseFailures int
}

func newReport(w io.Writer, now func() time.Time) *report {
	t := now()
	return &report{w: w, now: now, start: t, printed: t, pkgs: map[string]*pkg{}, build: map[string]*test{}}
}

func (r *report) printf(format string, args ...any) {
	fmt.Fprintf(r.w, format, args...)
	r.printed = r.now()
}

// read consumes the stream until EOF.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		r.line(sc.Bytes())
	}
	return sc.Err()
}

func (r *report) line(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		s := string(b)
		if cmd, ok := strings.CutPrefix(s, "##testreport "); ok {
			r.command(cmd)
			return
		}
		r.printf("%s\n", s)
		return
	}
	r.event(e)
}

func (r *report) command(cmd string) {
	verb, arg, _ := strings.Cut(cmd, " ")
	switch verb {
	case "fail":
		r.failures = append(r.failures, arg)
		r.anyTest = true
	case "phase":
		r.phaseFailures = len(r.failures)
	case "exit":
		if len(r.failures) == r.phaseFailures {
			name, code, _ := strings.Cut(arg, " ")
			r.failures = append(r.failures, name+" (exit status "+code+")")
		}
	default:
		r.printf("##testreport %s\n", cmd)
	}
}

func (r *report) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{started: r.now(), tests: map[string]*test{}}
		r.pkgs[name] = p
	}
	return p
}

func (r *report) event(e event) {
	switch e.Action {
	case "build-output":
		b := r.build[e.ImportPath]
		if b == nil {
			b = &test{}
			r.build[e.ImportPath] = b
		}
		b.add(strings.TrimRight(e.Output, "\n"))
		return
	case "build-fail":
		r.printf("--- BUILD FAIL %s\n", e.ImportPath)
		if b := r.build[e.ImportPath]; b != nil {
			r.dump(b)
		}
		delete(r.build, e.ImportPath)
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "start":
			p.started = r.now()
		case "output":
			p.output.add(strings.TrimRight(e.Output, "\n"))
		case "skip": // no test files
			delete(r.pkgs, e.Package)
		case "pass":
			r.pkgTimes = append(r.pkgTimes, timing{e.Package, e.Elapsed})
			if len(p.tests) == 0 {
				r.printf("ok   %s %.1fs\n", e.Package, e.Elapsed)
			} else {
				r.printf("ok   %s %.1fs (%d tests left no verdict)\n", e.Package, e.Elapsed, len(p.tests))
			}
			delete(r.pkgs, e.Package)
		case "fail":
			r.pkgTimes = append(r.pkgTimes, timing{e.Package, e.Elapsed})
			r.printf("FAIL %s %.1fs\n", e.Package, e.Elapsed)
			// A test still running when the package failed (a panic or a
			// timeout) is where it failed: show its output too.
			names := make([]string, 0, len(p.tests))
			for n := range p.tests {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				r.printf("--- unfinished %s %s\n", e.Package, n)
				r.dump(p.tests[n])
				r.failures = append(r.failures, e.Package+" "+n)
			}
			if !p.failed && len(names) == 0 {
				r.dump(&p.output)
				r.failures = append(r.failures, e.Package+" (package)")
			}
			r.anyTest = true
			delete(r.pkgs, e.Package)
		}
		return
	}
	t := p.tests[e.Test]
	if (e.Action == "pass" || e.Action == "fail") && !strings.Contains(e.Test, "/") {
		r.testTimes = append(r.testTimes, timing{e.Package + " " + e.Test, e.Elapsed})
	}
	switch e.Action {
	case "run":
		r.anyTest = true
		p.tests[e.Test] = &test{}
	case "output":
		if t != nil {
			t.add(strings.TrimRight(e.Output, "\n"))
		}
		// A subtest's lines also go to its parent: a parent that fails
		// alone (cleanup, leak) shows everything.
		if i := strings.LastIndexByte(e.Test, '/'); i > 0 {
			if parent := p.tests[e.Test[:i]]; parent != nil && parent != t {
				parent.add(strings.TrimRight(e.Output, "\n"))
			}
		}
	case "pass":
		r.passed++
		delete(p.tests, e.Test)
	case "skip":
		if t != nil && slices.ContainsFunc(t.out, func(l string) bool { return strings.Contains(l, testtier.SkipPrefix) }) {
			r.otherTier++
			delete(p.tests, e.Test)
			return
		}
		r.skipped++
		if t != nil && os.Getenv("CI") == "true" {
			r.printf("--- SKIP %s %s\n", e.Package, e.Test)
			r.dump(t)
		}
		delete(p.tests, e.Test)
	case "fail":
		name := e.Package + " " + e.Test
		// A parent that fails because a subtest did is neither listed
		// nor counted: the subtest is the failure.
		if !slices.ContainsFunc(r.failures, func(f string) bool { return strings.HasPrefix(f, name+"/") }) {
			r.printf("--- FAIL %s (%.1fs)\n", name, e.Elapsed)
			if t != nil {
				r.dump(t)
			}
			r.failures = append(r.failures, name)
		}
		p.failed = true
		delete(p.tests, e.Test)
	}
}

func (r *report) dump(t *test) {
	if t.dropped > 0 {
		r.printf("    [... %d earlier lines]\n", t.dropped)
	}
	for _, l := range t.out {
		r.printf("    %s\n", l)
	}
}

// ticker prints a progress line whenever nothing was printed for every.
func (r *report) ticker(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(every / 6)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				r.mu.Lock()
				if r.now().Sub(r.printed) >= every {
					r.progress()
				}
				r.mu.Unlock()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (r *report) progress() {
	var b bytes.Buffer
	fmt.Fprintf(&b, "... %s: %s", r.now().Sub(r.start).Round(time.Second), r.counts())
	if len(r.pkgs) == 0 {
		b.WriteString("; building or between phases")
	} else {
		names := make([]string, 0, len(r.pkgs))
		for n := range r.pkgs {
			names = append(names, n)
		}
		slices.Sort(names)
		b.WriteString("; running")
		for _, n := range names {
			p := r.pkgs[n]
			fmt.Fprintf(&b, " %s (%s", strings.TrimPrefix(n, "github.com/fxelection/fxelection/"), r.now().Sub(p.started).Round(time.Second))
			if len(p.tests) > 0 {
				fmt.Fprintf(&b, ", %d tests", len(p.tests))
			}
			b.WriteString(")")
		}
	}
	r.printf("%s\n", b.String())
}

func (r *report) counts() string {
	s := fmt.Sprintf("%d passed, %d failed, %d skipped", r.passed, r.failed(), r.skipped)
	if r.otherTier > 0 {
		s += fmt.Sprintf(" (%d in tiers not run)", r.otherTier)
	}
	return s
}

// failed counts the failures (a parent failed only through its subtests
// is not one).
func (r *report) failed() int { return len(r.failures) }

// finish prints the failures and the closing count line, and reports
// whether the run was green.
func (r *report) finish() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Packages that never ended: the stream was cut (a killed go test).
	names := make([]string, 0, len(r.pkgs))
	for n := range r.pkgs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		r.failures = append(r.failures, n+" (no verdict)")
	}
	if len(r.failures) > 0 {
		r.printf("\nFailed:\n")
		for _, f := range r.failures {
			r.printf("  %s\n", f)
		}
	}
	r.printSlowest("packages", r.pkgTimes)
	r.printSlowest("tests", r.testTimes)
	r.printf("took %s\n%s\n", r.now().Sub(r.start).Round(time.Second), r.counts())
	return len(r.failures) == 0 && r.anyTest
}

// printSlowest prints the slowest of ts, longest first.
func (r *report) printSlowest(what string, ts []timing) {
	if len(ts) == 0 {
		return
	}
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	r.printf("\nSlowest %s:\n", what)
	for _, t := range ts[:min(slowest, len(ts))] {
		r.printf("  %7.1fs %s\n", t.elapsed, strings.TrimPrefix(t.name, "github.com/fxelection/fxelection/"))
	}
}
