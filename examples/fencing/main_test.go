package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsThisProgram keeps the README's fencing example true.
func TestReadmeShowsThisProgram(t *testing.T) {
	doctest.ReadmeShows(t, "../../README.md", "fencing", "main.go")
}

// TestFencingRuns runs the program against a private Redis and checks that
// the late write was refused and b's write stands.
func TestFencingRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	t.Setenv("REDIS_ADDR", srv.Addr())
	out := doctest.Stdout(t, main)
	t.Log(out)
	for _, want := range []string{"a writes with term", ": <nil>\nb writes with term", "a's late write refused: true", "owner: b"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}
