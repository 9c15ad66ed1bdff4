package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

func TestMain(m *testing.M) { os.Exit(testserver.RunMain(m, nil)) }

func noEnv(string) (string, bool) { return "", false }

// TestTwoInstances: two instances on a real etcd elect one leader, which
// /leader reports on both; stopping the leader hands over to the other.
func TestTwoInstances(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
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
			in.done <- run(ctx, []string{"--endpoints", strings.Join(c.Endpoints(), ","), "--id", id, "--http", in.addr,
				"--lease", "2s", "--renew-deadline", "1300ms", "--retry", "300ms"}, &in.out, &stderr, noEnv)
		}()
		t.Cleanup(func() {
			cancel()
			if code := <-in.done; code != 0 {
				t.Errorf("%s exited %d: %s", id, code, stderr.String())
			}
		})
		return in
	}
	leaderOf := func(in *inst) (leader string, leading bool) {
		resp, err := http.Get("http://" + in.addr + "/leader")
		if err != nil {
			return "", false
		}
		defer resp.Body.Close()
		var out []leaderJSON
		if json.NewDecoder(resp.Body).Decode(&out) != nil || len(out) != 1 || out[0].Backend != "etcd" {
			return "", false
		}
		return out[0].Leader, out[0].Leading
	}
	a, b := start("a"), start("b")
	var first *inst
	electiontesting.WaitFor(t, 30*time.Second, "both instances to report one leader", func() bool {
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
	if !strings.Contains(first.out.String(), "leadership acquired") {
		t.Fatalf("leader's log lacks the contract line:\n%s", first.out.String())
	}
	other := a
	if first == a {
		other = b
	}
	first.cancel()
	electiontesting.WaitFor(t, 30*time.Second, "the other instance to lead", func() bool {
		l, leading := leaderOf(other)
		return leading && l == other.id
	})
}

// TestBadUsage: bad flags or settings exit 2 on one line, without the
// password or the user info pasted into an endpoint.
func TestBadUsage(t *testing.T) {
	const pw = "pw-NEVER-shown-9f"
	env := func(name string) (string, bool) {
		if name == passwordEnv {
			return pw, true
		}
		return "", false
	}
	for _, args := range [][]string{
		{"--endpoints", "http://u:" + pw + "@h:1", "--username", "u"},
		{"--endpoints", "h:1"}, // password without username
		{"--lease", "1s", "--renew-deadline", "2s", "--username", "u"},
		{"--nope"},
		{"extra"},
	} {
		var stdout, stderr electiontesting.LogBuffer
		if code := run(context.Background(), args, &stdout, &stderr, env); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
		if strings.Contains(stderr.String(), pw) || strings.Contains(stdout.String(), pw) {
			t.Errorf("%q: output shows the password: %s", args, stderr.String())
		}
	}
}
