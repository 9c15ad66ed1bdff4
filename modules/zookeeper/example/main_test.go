package main

import (
	"os"
	"testing"

	"github.com/fxelection/fxelection/internal/exampleapp/exampletest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { os.Exit(testserver.RunMain(m, nil)) }

func noEnv(string) (string, bool) { return "", false }

// TestTwoInstances: two instances on a real ZooKeeper elect one leader,
// which /leader reports on both; stopping the leader hands over to the
// other.
func TestTwoInstances(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewZooKeeper(t, testserver.ZooKeeperOptions{})
	exampletest.CheckTwoInstances(t, run, []string{"--servers", srv.Addr(), "--session-timeout", "10s"}, noEnv, "zookeeper") // longer than CheckTwoInstances's renew deadline
}

// TestBadUsage: bad flags or settings exit 2 on one line, without the
// password.
func TestBadUsage(t *testing.T) {
	const pw = "pw-NEVER-shown-9f"
	env := func(name string) (string, bool) {
		if name == passwordEnv {
			return pw, true
		}
		return "", false
	}
	exampletest.CheckBadUsage(t, run, [][]string{
		{"--servers", "u:" + pw + "@h:1", "--username", "u"},
		{"--servers", "h:1"}, // password without username
		{"--servers", "h:1", "--username", "u", "--session-timeout", "1ms"},
		{"--lease", "1s", "--renew-deadline", "2s", "--username", "u"},
		{"--nope"},
		{"extra"},
	}, env, pw)
}
