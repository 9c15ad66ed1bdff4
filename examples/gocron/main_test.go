package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsThisProgram keeps the README's gocron example true.
func TestReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- gocron:begin -->\n```go\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- gocron:end -->")
	if !ok || !ok2 {
		t.Fatal("README has no gocron block")
	}
	if block != string(src) {
		t.Fatal("README gocron example differs from examples/gocron/main.go; update the README")
	}
}

// TestGocronRuns: the job runs on a until a stops, then only on b.
func TestGocronRuns(t *testing.T) {
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
	main()
	_ = w.Close()
	os.Stdout = old
	out := <-done
	t.Log(out)
	before, after, ok := strings.Cut(out, "a stopped\n")
	if !ok || !strings.Contains(before, "a runs") || strings.Contains(after, "a runs") || !strings.Contains(after, "b runs") {
		t.Fatalf("job did not move from a to b:\n%s", out)
	}
	if strings.LastIndex(out, "a runs") > strings.Index(out, "b runs") {
		t.Fatalf("a and b took turns running the job:\n%s", out)
	}
}
