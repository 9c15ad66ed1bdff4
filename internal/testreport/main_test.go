package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by one second per reading.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func run(t *testing.T, in string) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	r := newReport(&out, (&fakeClock{}).now)
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	ok := r.finish()
	return out.String(), ok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCounts(t *testing.T) {
	in := `==> go test -race
{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestB/one"}
{"Action":"output","Package":"p","Test":"TestB/one","Output":"    b_test.go:9: boom\n"}
{"Action":"fail","Package":"p","Test":"TestB/one","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestB/two"}
{"Action":"skip","Package":"p","Test":"TestB/two","Elapsed":0}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0.2}
{"Action":"fail","Package":"p","Elapsed":0.3}
{"Action":"start","Package":"q"}
{"Action":"skip","Package":"q","Output":"?   \tq\t[no test files]\n"}
##testreport fail gofmt
`
	out, ok := run(t, in)
	if ok {
		t.Error("a run with failures was reported green")
	}
	if got, want := lastLine(out), "1 passed, 2 failed, 1 skipped"; got != want {
		t.Errorf("last line %q, want %q\n%s", got, want, out)
	}
	for _, want := range []string{"==> go test -race\n", "--- FAIL p TestB/one", "b_test.go:9: boom", "Failed:\n  p TestB/one\n  gofmt\n", "FAIL p 0.3s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  p TestB\n") {
		t.Errorf("a parent failed through its subtest is listed:\n%s", out)
	}
}

func TestPackageFailureOutsideTests(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"goleak: Errors on successful test run: found unexpected goroutines\n"}
{"Action":"fail","Package":"p","Elapsed":1}
{"Action":"start","Package":"r"}
{"Action":"run","Package":"r","Test":"TestHang"}
{"Action":"output","Package":"r","Test":"TestHang","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"r","Elapsed":1}
{"ImportPath":"s [s.test]","Action":"build-output","Output":"s/x.go:1:1: undefined: y\n"}
{"ImportPath":"s [s.test]","Action":"build-fail"}
{"Action":"start","Package":"s"}
{"Action":"output","Package":"s","Output":"FAIL\ts [build failed]\n"}
{"Action":"fail","Package":"s","Elapsed":0}
`
	out, ok := run(t, in)
	if ok {
		t.Error("reported green")
	}
	for _, want := range []string{"goleak: Errors", "p (package)", "--- unfinished r TestHang", "panic: test timed out", "r TestHang", "undefined: y", "s (package)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got, want := lastLine(out), "1 passed, 3 failed, 0 skipped"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

func TestGreenAndEmpty(t *testing.T) {
	out, ok := run(t, `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p"}
`)
	if !ok || lastLine(out) != "1 passed, 0 failed, 0 skipped" {
		t.Errorf("green run: ok=%v\n%s", ok, out)
	}
	if _, ok := run(t, "==> nothing\n"); ok {
		t.Error("a stream without tests was reported green")
	}
	// A stream cut mid-package (go test killed) is not green.
	if out, ok := run(t, `{"Action":"run","Package":"p","Test":"TestA"}`+"\n"); ok || !strings.Contains(out, "p (no verdict)") {
		t.Errorf("cut stream: ok=%v\n%s", ok, out)
	}
}

func TestPhaseExit(t *testing.T) {
	in := `##testreport phase vet
##testreport exit vet 1
##testreport phase race
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p"}
##testreport exit race 1
`
	out, ok := run(t, in)
	if ok || !strings.Contains(out, "  vet (exit status 1)\n") || strings.Contains(out, "race (exit") {
		t.Errorf("ok=%v\n%s", ok, out)
	}
	if got, want := lastLine(out), "0 passed, 2 failed, 0 skipped"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

func TestProgress(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, (&fakeClock{}).now)
	r.line([]byte(`{"Action":"run","Package":"github.com/fxelection/fxelection/modules/redis","Test":"TestA"}`))
	r.progress()
	if got := out.String(); !strings.Contains(got, "0 passed, 0 failed, 0 skipped; running modules/redis (") || !strings.Contains(got, "1 tests") {
		t.Errorf("progress line: %q", got)
	}
}

func TestKeepsTheLastLines(t *testing.T) {
	var tt test
	for i := range maxKept + 5 {
		tt.add(strings.Repeat("x", i%3))
	}
	if len(tt.out) != maxKept || tt.dropped != 5 {
		t.Errorf("kept %d, dropped %d", len(tt.out), tt.dropped)
	}
}

func TestOtherTierIsNotASkip(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestSoakChaos"}
{"Action":"output","Package":"p","Test":"TestSoakChaos","Output":"    chaos_test.go:9: testtier: in the soak tier (FXELECTION_TEST_TIERS=soak, or ./scripts/test.sh --soak)\n"}
{"Action":"skip","Package":"p","Test":"TestSoakChaos","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestRedis"}
{"Action":"output","Package":"p","Test":"TestRedis","Output":"    redis_test.go:9: redis-server not installed\n"}
{"Action":"skip","Package":"p","Test":"TestRedis","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":0.3}
`
	out, ok := run(t, in)
	if !ok {
		t.Errorf("a green run was reported failed:\n%s", out)
	}
	if got, want := lastLine(out), "1 passed, 0 failed, 1 skipped (1 in tiers not run)"; got != want {
		t.Errorf("last line %q, want %q\n%s", got, want, out)
	}
	if !strings.Contains(out, "Slowest packages:\n      0.3s p\n") || !strings.Contains(out, "Slowest tests:\n      0.1s p TestA\n") {
		t.Errorf("output lacks the slowest lists:\n%s", out)
	}
}
