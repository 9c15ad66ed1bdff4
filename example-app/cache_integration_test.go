package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestThreeProcessesOnCaches runs three example-app processes on memcached
// and on NATS JetStream KV: a leader is elected, SIGKILL fails over once the
// lease expires (memcached: its whole-second TTL; NATS: observed time),
// SIGTERM hands over at once (NATS: pushed by the KV watch; memcached: at
// the next poll), and "status" reads the leader from the store.
func TestThreeProcessesOnCaches(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	const lease, retry = 3 * time.Second, 500 * time.Millisecond
	cases := []struct {
		name     string
		slack    time.Duration // beyond lease+retry for a SIGKILL failover
		handover time.Duration // bound on the SIGTERM hand-over
	}{
		{"memcached", 2 * time.Second, time.Duration(1.2*float64(retry)) + time.Second},
		{"nats", 0, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var backend []string
			switch c.name {
			case "memcached":
				srv := testserver.NewMemcached(t, testserver.MemcachedOptions{})
				backend = []string{"--backend", "memcached", "--memcached-addr", srv.Addr()}
			case "nats":
				srv := testserver.NewNats(t, testserver.NatsOptions{})
				backend = []string{"--backend", "nats", "--nats-url", srv.URL(), "--nats-bucket", "it"}
			}
			p := &procs{t: t}
			_, _, third := p.failover(backend, lease, retry, c.slack, c.handover)
			p.checkWorkTerms(third.Term)

			status := append([]string{"status"}, backend...)
			out, err := exec.Command(binary, append(status, "--election", "it")...).CombinedOutput()
			if err != nil {
				t.Fatalf("status: %v\n%s", err, out)
			}
			for _, want := range []string{fmt.Sprintf("leader:   proc-%d", third.proc), fmt.Sprintf("term:     %d", third.Term)} {
				if !strings.Contains(string(out), want) {
					t.Errorf("status output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestCacheFlags: the cache backends' required flags and limits exit 2
// with one line naming the flag; FXELECTION_* variables set them.
func TestCacheFlags(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--backend", "memcached"}, nil, "--memcached-addr is required"},
		{[]string{"--backend", "memcached", "--memcached-addr", "127.0.0.1:1", "--lease", "800h"}, nil, "--lease"},
		{[]string{"--backend", "nats"}, nil, "--nats-url is required"},
		{[]string{"--backend", "nats", "--nats-url", "nats://127.0.0.1:1", "--nats-bucket", "a.b"}, nil, "--nats-bucket"},
		{[]string{"--backend", "nats", "--nats-url", "nats://127.0.0.1:1", "--nats-bucket", ""}, nil, "--nats-bucket"},
		{[]string{"--backend", "nats", "--nats-url", "nats://127.0.0.1:1", "--nats-replicas", "7"}, nil, "--nats-replicas"},
		{[]string{"--backend", "nats"}, map[string]string{"FXELECTION_NATS_REPLICAS": "0", "FXELECTION_NATS_URL": "nats://x:1"}, "--nats-replicas"},
	} {
		_, err := parseArgs(c.args, env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseArgs(%q, %v) = %v, want an error naming %s", c.args, c.env, err, c.want)
		}
	}
	o, err := parseArgs([]string{"--backend", "nats"}, env(map[string]string{
		"FXELECTION_NATS_URL": "nats://127.0.0.1:4222", "FXELECTION_NATS_PASSWORD": "s3cret-pw", "FXELECTION_NATS_BUCKET": "leases",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := backendSettings(t, o)
	if s["url"] != "nats://127.0.0.1:4222" || s["password"] != "s3cret-pw" || s["bucket"] != "leases" || s["replicas"] != 1.0 {
		t.Fatalf("settings from FXELECTION_* = %v", s)
	}
	o, err = parseArgs([]string{"--backend", "memcached"}, env(map[string]string{"FXELECTION_MEMCACHED_ADDR": "10.0.0.1:11211,10.0.0.2:11211"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := backendSettings(t, o); s["addr"] != "10.0.0.1:11211,10.0.0.2:11211" {
		t.Fatalf("memcached from FXELECTION_MEMCACHED_ADDR: %v", s)
	}
}
