// Command example is example-app for the ZooKeeper backend. It lives in
// the zookeeper module, not in example-app, so that the root module never
// depends on the ZooKeeper client; it takes the same path as example-app
// --backend X (internal/exampleapp): the flags become a configuration
// document (one election on fxelection.backends.zookeeper plus the
// fxelection.extensions.metrics extension), or --config FILE runs a
// document of your own, and the app serves /metrics, /healthz, /readyz and
// /leader and logs "leadership acquired", "leadership lost", "leader
// observed" and "election error" as example-app does.
//
//	cd modules/zookeeper
//	go run ./example --servers localhost:2181 --id a --http 127.0.0.1:8080
//	go run ./example --servers localhost:2181 --id b --http 127.0.0.1:8081
//
// The digest password comes from the environment only
// (FXELECTION_ZOOKEEPER_PASSWORD), so it shows neither in the process list
// nor in the document.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/fxelection/fxelection/internal/exampleapp"
	_ "github.com/fxelection/fxelection/modules/zookeeper" // registers fxelection.backends.zookeeper
)

// passwordEnv holds the digest password, if any.
const passwordEnv = "FXELECTION_ZOOKEEPER_PASSWORD"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// backend is the zookeeper module's flags.
var backend = exampleapp.Backend{
	Module: "fxelection.backends.zookeeper",
	Flags: func(fs *flag.FlagSet) func(func(string) (string, bool)) map[string]any {
		servers := fs.String("servers", "localhost:2181", "ZooKeeper servers, comma-separated host:port")
		sessionTimeout := fs.Duration("session-timeout", 0, "session timeout to ask for (default 15s)")
		prefix := fs.String("prefix", "", "znode prefix (default /fxelection)")
		username := fs.String("username", "", "digest user (password from $"+passwordEnv+")")
		return func(lookupEnv func(string) (string, bool)) map[string]any {
			s := map[string]any{"servers": strings.Split(*servers, ",")}
			if *sessionTimeout != 0 {
				s["session_timeout"] = sessionTimeout.String()
			}
			if *prefix != "" {
				s["prefix"] = *prefix
			}
			if *username != "" {
				s["username"] = *username
			}
			if _, ok := lookupEnv(passwordEnv); ok {
				s["password"] = "{env." + passwordEnv + "}" // resolved and redacted by the config package
			}
			return s
		}
	},
}

// run is main without the process (exampleapp.Run).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return exampleapp.Run(ctx, "example", backend, args, stdout, stderr, lookupEnv)
}
