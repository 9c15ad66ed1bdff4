package main

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestRunExitOnLoss: "run" with a document whose election has exit_on_loss
// exits 1, after stopping gracefully, when that election's lease is taken
// away (FLUSHALL under the leader); an election without it would have
// campaigned again. A removed election (ReasonStopped) would not count.
func TestRunExitOnLoss(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	const timing = `"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms"`
	file := writeFile(t, "exit.json", `{"elections": [
		{"name": "exits", "identity": "node-a", "exit_on_loss": true, `+timing+`,
		 "backend": {"module": "fxelection.backends.redis", "addr": "`+srv.Addr()+`"}}]}`)
	p := &procs{t: t, noID: true}
	i := p.start("run", "--config", file, "--http", freeAddr(t), "--log-format", "json")
	p.waitFor(0, 30*time.Second, func(l logLine) bool { return l.Msg == "leadership acquired" && l.Election == "exits" })

	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	if err := client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			for _, l := range p.snapshot() {
				t.Logf("%+v", l)
			}
		}
	}()
	p.waitFor(0, 30*time.Second, func(l logLine) bool {
		return l.Msg == "leadership lost" && l.Election == "exits" && l.Reason == "lease lost"
	})
	select {
	case <-p.eof[i]:
	case <-time.After(60 * time.Second):
		t.Fatal("the process did not exit after losing an exit_on_loss election")
	}
	err := p.cmds[i].Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1", err)
	}
}
