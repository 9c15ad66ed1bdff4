package main

import (
	"os"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/internal/exampleapp/exampletest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	"github.com/fxelection/fxelection/modules/etcd/internal/etcdtest"
)

func TestMain(m *testing.M) { os.Exit(testserver.RunMain(m, nil)) }

func noEnv(string) (string, bool) { return "", false }

// TestTwoInstances: two instances on a real etcd elect one leader, which
// /leader reports on both; stopping the leader hands over to the other.
func TestTwoInstances(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	c := etcdtest.Start(t, etcdtest.Options{})
	exampletest.CheckTwoInstances(t, run, []string{"--endpoints", strings.Join(c.Endpoints(), ",")}, noEnv, "etcd")
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
	exampletest.CheckBadUsage(t, run, [][]string{
		{"--endpoints", "http://u:" + pw + "@h:1", "--username", "u"},
		{"--endpoints", "h:1"}, // password without username
		{"--lease", "1s", "--renew-deadline", "2s", "--username", "u"},
		{"--nope"},
		{"extra"},
	}, env, pw)
}
