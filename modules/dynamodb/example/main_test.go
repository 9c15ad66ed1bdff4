package main

import (
	"os"
	"testing"

	"github.com/fxelection/fxelection/internal/exampleapp/exampletest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { os.Exit(testserver.RunMain(m, nil)) }

// TestTwoInstances: two instances on a real DynamoDB Local (static
// credentials from the environment) elect one leader, which /leader
// reports on both; stopping the leader hands over to the other.
func TestTwoInstances(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewDynamoDB(t, testserver.DynamoDBOptions{})
	env := func(name string) (string, bool) {
		switch name {
		case accessKeyEnv:
			return "local", true
		case secretKeyEnv:
			return "local-secret", true
		}
		return "", false
	}
	exampletest.CheckTwoInstances(t, run, []string{"--region", "us-east-1", "--endpoint", srv.Endpoint(), "--table", "example"}, env, "dynamodb")
}

// TestBadUsage: bad flags or settings exit 2 on one line, without the
// secret key.
func TestBadUsage(t *testing.T) {
	const secret = "sk-NEVER-shown-9f"
	env := func(name string) (string, bool) {
		if name == secretKeyEnv {
			return secret, true
		}
		return "", false
	}
	exampletest.CheckBadUsage(t, run, [][]string{
		{"--table", "t"}, // no region
		{"--region", "r", "--table", ""},
		{"--region", "r", "--endpoint", "http://u:" + secret + "@h:1"},
		{"--region", "r", "--lease", "1s", "--renew-deadline", "2s"},
		{"--nope"},
		{"extra"},
	}, env, secret)
}
