package pglease_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
)

// TestStopFrozenServer: an fx app built from a document with a postgres
// election stops within the election's stop_timeout + 1 s when the
// PostgreSQL server is frozen (SIGSTOP on the postmaster and its
// children), even though fx's own stop deadline is much later: the
// module's cleanup closes its pool without waiting for the server.
//
// It runs on a server of its own: freezing the package's shared one would
// stall the other tests.
func TestStopFrozenServer(t *testing.T) {
	srv := testserver.NewPostgres(t, testserver.PostgresOptions{})
	const stopTimeout = 3 * time.Second
	doc := fmt.Appendf(nil, `{"elections": [{"name": %q, "lease_duration": %q, "renew_deadline": %q,
		"retry_period": %q, "max_backoff": %q, "stop_timeout": %q,
		"backend": {"module": "fxelection.backends.postgres", "dsn": %q}}]}`,
		election(t), electiontesting.FaultLease, electiontesting.FaultRenew, electiontesting.FaultRetry,
		electiontesting.FaultMaxBackoff, stopTimeout, srv.DSN())
	opt, err := config.Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	var all struct {
		fx.In
		Electors []*fxelection.Elector `group:"fxelection.electors"`
	}
	app := fx.New(fx.NopLogger, opt, fx.Populate(&all))
	if err := app.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = app.Stop(context.Background())
		}
	})
	electiontesting.WaitFor(t, 30*time.Second, "the election to have a leader", all.Electors[0].IsLeader)

	freeze(t, postmasterPID(t, srv.DSN()))

	// fx's default stop timeout, well past stop_timeout + 1 s.
	ctx, cancel := context.WithTimeout(context.Background(), fx.DefaultTimeout)
	defer cancel()
	start := time.Now()
	err = app.Stop(ctx)
	took := time.Since(start)
	stopped = true
	if limit := stopTimeout + time.Second; took > limit {
		t.Fatalf("fx Stop took %v with PostgreSQL frozen, want at most %v (err %v)", took, limit, err)
	}
	t.Logf("fx Stop returned after %v: %v", took, err)
}

// postmasterPID returns the pid of the postmaster serving dsn: the parent
// of a backend process.
func postmasterPID(t *testing.T, dsn string) int {
	t.Helper()
	var backend int
	if err := admin(t, dsn).QueryRow(ctxT(t), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	_, ppid := procStat(t, backend)
	return ppid
}

// freeze stops pid and every descendant with SIGSTOP (the postmaster
// first, so that it forks no new backend meanwhile), and continues them at
// cleanup, before the server is closed.
func freeze(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP postmaster: %v", err)
	}
	frozen := []int{pid}
	t.Cleanup(func() {
		for _, p := range frozen {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	})
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid := procStat(t, child); ppid == pid {
			if syscall.Kill(child, syscall.SIGSTOP) == nil {
				frozen = append(frozen, child)
			}
		}
	}
}

// procStat returns the state and parent pid of process pid, or "" and 0
// when it is gone.
func procStat(t *testing.T, pid int) (state string, ppid int) {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0
	}
	// pid (comm) state ppid …; comm may contain spaces and parentheses.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid
}
