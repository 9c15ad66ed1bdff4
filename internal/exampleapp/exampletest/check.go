// Package exampletest checks an example command of internal/exampleapp
// against a real store.
package exampletest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/exampleapp"
	"github.com/fxelection/fxelection/internal/testserver"
)

// RunFunc is an example command's main without the process, as
// exampleapp.Run.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int

// The timing of CheckTwoInstances's instances. A store call may take
// seconds on a busy machine (DynamoDB Local, a JVM, most of all), so the
// renew deadline leaves a leader that long to renew. A store that ends a
// session by itself (ZooKeeper) must be given a session longer than it.
const (
	twoLease = 10 * time.Second
	twoRenew = 7 * time.Second
	twoRetry = time.Second
	// twoWait bounds each wait of CheckTwoInstances: a leader is there
	// at the first attempt (a fresh election) and the other takes over at
	// its next retry once the leader released, so a lease and a retry
	// bound either; the rest is slack for a busy machine. A wait ends as
	// soon as what it waits for holds.
	twoWait = twoLease + twoRetry + time.Minute
)

// CheckTwoInstances runs two instances of an example command (args: the
// backend's flags, lookupEnv its environment) on a real store: they elect
// one leader, which /leader reports on both with backend (the backend's
// name), the leader logs the contract line, and stopping it hands over to
// the other.
func CheckTwoInstances(t *testing.T, run RunFunc, args []string, lookupEnv func(string) (string, bool), backend string) {
	t.Helper()
	type inst struct {
		id, addr string
		out      electiontesting.LogBuffer
		cancel   context.CancelFunc
		done     chan int
	}
	start := func(id string) *inst {
		port, err := testserver.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		in := &inst{id: id, addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan int, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		in.cancel = cancel
		var stderr electiontesting.LogBuffer
		go func() {
			in.done <- run(ctx, append(slices.Clone(args), "--id", id, "--http", in.addr,
				"--lease", twoLease.String(), "--renew-deadline", twoRenew.String(), "--retry", twoRetry.String()), &in.out, &stderr, lookupEnv)
		}()
		t.Cleanup(func() {
			cancel()
			if code := <-in.done; code != 0 {
				t.Errorf("%s exited %d: %s", id, code, stderr.String())
			}
		})
		return in
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	leaderOf := func(in *inst) (leader string, leading bool) {
		resp, err := client.Get("http://" + in.addr + "/leader")
		if err != nil {
			return "", false
		}
		defer resp.Body.Close()
		var out []exampleapp.LeaderJSON
		if json.NewDecoder(resp.Body).Decode(&out) != nil || len(out) != 1 || out[0].Backend != backend {
			return "", false
		}
		return out[0].Leader, out[0].Leading
	}
	a, b := start("a"), start("b")
	var first *inst
	electiontesting.WaitFor(t, twoWait, "both instances to report one leader", func() bool {
		la, leadingA := leaderOf(a)
		lb, leadingB := leaderOf(b)
		if la == "" || la != lb || leadingA == leadingB {
			return false
		}
		first = b
		if leadingA {
			first = a
		}
		return true
	})
	// The observer logs after the leadership is recorded, which /leader
	// reads: the line may come just after /leader reports the leader.
	electiontesting.WaitFor(t, twoWait, "the leader's contract line (leadership acquired)", func() bool {
		return strings.Contains(first.out.String(), "leadership acquired")
	})
	other := a
	if first == a {
		other = b
	}
	first.cancel()
	electiontesting.WaitFor(t, twoWait, "the other instance to lead", func() bool {
		l, leading := leaderOf(other)
		return leading && l == other.id
	})
}

// CheckBadUsage runs an example command with each of cases (bad flags or
// settings) and the environment lookupEnv, and checks that each exits 2
// and that neither output shows secret (a credential lookupEnv gives).
func CheckBadUsage(t *testing.T, run RunFunc, cases [][]string, lookupEnv func(string) (string, bool), secret string) {
	t.Helper()
	for _, args := range cases {
		var stdout, stderr electiontesting.LogBuffer
		if code := run(context.Background(), args, &stdout, &stderr, lookupEnv); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
		if strings.Contains(stderr.String(), secret) || strings.Contains(stdout.String(), secret) {
			t.Errorf("%q: output shows the secret: %s", args, stderr.String())
		}
	}
}
