// Command example-app is the program to copy: an fx application that elects
// a leader on the backend named by --backend, does leader-only work, and
// serves /metrics, /healthz, /readyz and /leader. "example-app run --config
// FILE" (or "example-app --config FILE", the same) runs every election a
// configuration document (package fxelection/config) describes, in one
// process, in a config.Runtime; the flags for one election become such a
// document internally, so both take one path. Without --backend or
// --config it runs a demo of three candidates on the in-memory backend,
// with hand-overs and failovers to watch. "example-app status" prints the
// current leader; "example-app exec [flags] -- CMD [ARGS…]" runs CMD
// only while this process leads its election (its help states the
// timing and signal rules); "example-app validate --config FILE" checks a
// configuration document without running or dialling anything (exit 0 or
// 2); "example-app reload --config FILE [--admin ADDR]" checks it too, then
// sends it to a running process's admin endpoint (exit 0 applied, 2 bad
// document, 1 unreachable or not applied); "example-app modules" lists the
// registered modules; "example-app help [COMMAND]" prints the usage (of
// one command).
//
// With --config the admin endpoint listens on --admin: by default a unix
// socket (unix/PATH, default $TMPDIR/example-app-UID/admin.sock in a
// directory of mode 0700) whose bits, --admin-socket-mode (0600), say who
// may use it; on TCP (host:port) every request must carry the token of
// --admin-token-file or FXELECTION_ADMIN_TOKEN ("Authorization: Bearer",
// else 401), and without one the program refuses to start; a non-loopback
// address needs --admin-remote, and on loopback requests must name a
// loopback Host; "off" for none. Whoever can use it controls the process.
// GET /config returns the running document with secrets and placeholder
// values masked; POST /load (JSON or YAML, at most 4 MiB, parsed as
// --config is, but with {env.NAME} and {file.PATH} placeholders refused
// unless --admin-allow-placeholders) replaces it. A bad document changes nothing (400, one problem per line naming its
// JSON path, never a value). A good one is applied (200) keeping what did
// not change: an election whose settings and backend are unchanged keeps
// running untouched (same leader, same term, no "leadership lost");
// removed elections stop and release, added ones start, changed ones
// restart; a backend module is provisioned anew only when its settings
// (after placeholder expansion, secrets included) changed. Documents with
// extensions are refused: the program serves metrics and health itself.
// POST /resign?election=NAME[&to=ID] (query or form parameters) makes
// this process's leader of NAME resign (Elector.Resign), or hand the lease
// to the candidate ID (Elector.ResignTo), within its stop_timeout: 200
// "handed over to …", "resigned" or "not leading: nothing to do"; 400
// without a name or for a bad successor (not an identity, or the leader
// itself); 404 for an unknown election; 500 when the store failed; a
// cross-origin browser request is refused (403). /load and /resign answer
// only POST (405).
//
// Without flags it runs the demo: three candidates; every 5 s it stops the
// leader gracefully (hand-over at once) or cuts it off the store without a
// release (failover once the lease expires), printing one line per event.
// Its faults come from fxelection/electiontest/faultinject, so the binary
// links no test code. With --backend it runs one candidate per election:
// start several, each with its own --id and --http. "example-app help"
// lists every flag, its FXELECTION_ variable and its default.
//
// Logs (--log-format json: one object per line on stdout) follow a fixed
// contract so scripts can follow an election (msg, then attributes; term is
// a number):
//
//   - "leadership acquired": election, identity, term;
//   - "leadership lost": election, identity, term, reason;
//   - "leader observed": election, identity, leader, term;
//   - "leader work": election, identity, term (from inside RunIfLeader,
//     never after the leader context ended);
//   - "election error": election, identity, op, error;
//   - exec's, on stderr: "child started" (election, identity, term,
//     pid), "child signalled" (… pid, signal, reason), "child exited"
//     (… pid, code), "child restart" (… code, in).
//
// SIGTERM or SIGINT drains leader work, releases the lease and exits 0
// (exec: once the child is gone, with the child's exit code).
// Bad input exits 2 with one line on stderr naming the flag (and the
// FXELECTION_ variable when the value came from the environment), in
// every mode, before anything starts; passwords, keys, DSNs and
// connection strings are never echoed, and every error passes through
// backendkit.RedactText.
//
// With --config only --http, the --admin flags, --log-format and
// --work-interval may be set.
// The flags for one election become a document internally (--backend redis
// --redis-addr … is the module fxelection.backends.redis with "addr"), so a
// problem the config package reports at a JSON path is reported as the
// flag behind it; placeholders work only in files. /leader answers one
// object for one election and an array (in the document's order) for
// several; ?election=NAME picks that election's (404 if none has the
// name). /healthz, /readyz and /metrics cover every elector.
//
// The HTTP endpoints answer only GET and HEAD (anything else: 405 with
// Allow: GET, HEAD); the server bounds reading the header (5s), the whole
// request (10s), writing the response (30s) and idle keep-alive
// connections (60s). "status" prints what the store holds with anything
// non-printable escaped Go-style inside quotes, so a hostile record cannot
// forge lines or drive the terminal. go-redis logs through a process-wide
// logger (redis.SetLogger), which the library leaves alone; example-app
// routes it to its own logger at debug level, redacted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	// Backends register themselves (typed modules, or the flat registry the
	// example stands in for) from init.
	"github.com/fxelection/fxelection/fxelection/backendkit"
	_ "github.com/fxelection/fxelection/modules/blob"
	_ "github.com/fxelection/fxelection/modules/cache/memcached"
	_ "github.com/fxelection/fxelection/modules/cache/nats"
	_ "github.com/fxelection/fxelection/modules/postgres"
	_ "github.com/fxelection/fxelection/modules/redis"
	_ "github.com/fxelection/fxelection/modules/s3"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	o, err := parseArgs(args, getenv)
	var ue usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, o.help)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "example-app:", ue.msg)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "example-app:", err)
		return 2
	}
	if o.modules {
		if err := printModules(stdout); err != nil {
			fmt.Fprintln(stderr, "example-app:", err)
			return 1
		}
		return 0
	}
	logOut := stdout
	if o.exec {
		logOut = stderr // exec's stdout is the child's
	}
	logger := newLogger(o.logFormat, logOut)
	routeRedisLogs(logger, o.secrets())
	if o.exec {
		code, err := runExec(o, logger, stdout, stderr)
		switch {
		case errors.As(err, &ue):
			fmt.Fprintln(stderr, "example-app:", ue.msg)
			return 2
		case err != nil:
			fmt.Fprintln(stderr, "example-app:", oneLine(backendkit.RedactText(err.Error(), o.secrets()...)))
			if code == 0 {
				return 1
			}
		}
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch {
	case o.validate:
		err = runValidate(o, stdout)
	case o.reload:
		err = runReload(ctx, o, stdout)
	case o.status:
		err = runStatus(ctx, o, stdout)
	case o.configFile != "":
		err = runConfig(ctx, o, logger)
	case o.demo():
		err = runDemo(ctx, o, logger)
	default:
		err = runFlags(ctx, o, logger)
	}
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "example-app:", ue.msg)
		return 2
	}
	if err != nil {
		// Whatever a backend or fx said: secrets withheld, one line.
		fmt.Fprintln(stderr, "example-app:", oneLine(backendkit.RedactText(err.Error(), o.secrets()...)))
		return 1
	}
	return 0
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
