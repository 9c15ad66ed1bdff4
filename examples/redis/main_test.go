package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var servingAt = regexp.MustCompile(`msg="serving /metrics, /healthz, /readyz" addr=(\S+)`)

// TestRedisRuns runs the program against a private Redis, serving on a
// free port, until it leads; checks its three endpoints; then stops it,
// which ends its leadership and returns nil.
func TestRedisRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, srv.Addr(), "127.0.0.1:0", out)
	})
	p.WaitFor(t, electiontesting.LeaderLimit, `msg="leadership acquired" election=jobs`)
	m := servingAt.FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("no address in the log:\n%s", p.Output())
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for path, want := range map[string]string{
		"/healthz": `"status":"ok"`,
		"/readyz":  `"status":"ok"`,
		"/metrics": `fxelection_is_leader{election="jobs",identity=`,
	} {
		resp, err := client.Get("http://" + m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q:\n%s", path, resp.StatusCode, want, body)
		}
	}
	if out := p.Stop(t); !strings.Contains(out, `msg="leadership lost" election=jobs`) {
		t.Errorf("no leadership lost on stop:\n%s", out)
	}
}
