package main

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"

	"github.com/fxelection/fxelection/internal/exampleapp/exampletest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) {
	klog.LogToStderr(false) // client-go's request errors: the electors report them
	os.Exit(testserver.RunMain(m, nil))
}

// TestTwoInstances: two instances on a real kube-apiserver (server, CA
// file and a token from the environment) elect one leader, which /leader
// reports on both; stopping the leader hands over to the other.
func TestTwoInstances(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewKubeAPIServer(t, testserver.KubeAPIServerOptions{})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CACert(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(name string) (string, bool) {
		if name == tokenEnv {
			return srv.AdminToken(), true
		}
		return "", false
	}
	exampletest.CheckTwoInstances(t, run, []string{"--server", srv.URL(), "--ca-file", ca, "--namespace", "default"}, env, "kubernetes")
}

// TestBadUsage: bad flags or settings exit 2 on one line, without the
// token.
func TestBadUsage(t *testing.T) {
	const token = "tok-NEVER-shown-9f"
	env := func(name string) (string, bool) {
		if name == tokenEnv {
			return token, true
		}
		return "", false
	}
	exampletest.CheckBadUsage(t, run, [][]string{
		{"--server", "https://u:" + token + "@h:1"},
		{"--server", "http://h:1"},
		{"--context", "c"}, // context without kubeconfig
		{"--namespace", "Not_A_Label"},
		{"--lease", "1s", "--renew-deadline", "2s"},
		{"--nope"},
		{"extra"},
	}, env, token)
}
