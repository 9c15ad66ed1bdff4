package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsThisProgram keeps the README's fencing example true.
func TestReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- fencing:begin -->\n```go\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- fencing:end -->")
	if !ok || !ok2 {
		t.Fatal("README has no fencing block")
	}
	if block != string(src) {
		t.Fatal("README fencing example differs from examples/fencing/main.go; update the README")
	}
}

// TestFencingRuns runs the program against a private Redis and checks that
// the late write was refused and b's write stands.
func TestFencingRuns(t *testing.T) {
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	t.Setenv("REDIS_ADDR", srv.Addr())
	out := capture(t, main)
	t.Log(out)
	for _, want := range []string{"a writes with term", ": <nil>\nb writes with term", "a's late write refused: true", "owner: b"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// capture runs f with os.Stdout redirected and returns what it printed.
func capture(t *testing.T, f func()) string {
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
