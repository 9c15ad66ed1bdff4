// Command example-app is the program to copy: an fx application that elects
// a leader on the backend named by --backend, does leader-only work, and
// serves /metrics, /healthz, /readyz and /leader. With --config FILE it runs
// every election a configuration document (package fxelection/config)
// describes, in one process; the flags for one election become such a
// document internally, so both take one path. Without --backend or
// --config it runs a demo of three candidates on the in-memory backend,
// with hand-overs and failovers to watch. "example-app status" prints the
// current leader; "example-app validate --config FILE" checks a
// configuration document without running or dialling anything (exit 0 or
// 2); "example-app modules" lists the registered modules; "example-app help
// [COMMAND]" prints the usage (of one command).
//
// Logs (--log-format json: one object per line on stdout) follow a fixed
// contract so scripts can follow an election: "leadership acquired",
// "leadership lost", "leader observed", "leader work", "election error".
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
	logger := newLogger(o.logFormat, stdout)
	routeRedisLogs(logger, o.secrets())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch {
	case o.validate:
		err = runValidate(o, stdout)
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
