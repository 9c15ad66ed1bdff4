// Command example is example-app for the etcd backend. It lives in the etcd
// module, not in example-app, so that the root module never depends on etcd
// or gRPC; it takes the same path as example-app --backend X
// (internal/exampleapp): the flags become a configuration document (one
// election on fxelection.backends.etcd plus the
// fxelection.extensions.metrics extension), or --config FILE runs a
// document of your own, and the app serves /metrics, /healthz, /readyz and
// /leader and logs "leadership acquired", "leadership lost", "leader
// observed" and "election error" as example-app does.
//
//	cd modules/etcd
//	go run ./example --endpoints localhost:2379 --id a --http 127.0.0.1:8080
//	go run ./example --endpoints localhost:2379 --id b --http 127.0.0.1:8081
//
// The password comes from the environment only (FXELECTION_ETCD_PASSWORD),
// so it shows neither in the process list nor in the document.
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
	_ "github.com/fxelection/fxelection/modules/etcd" // registers fxelection.backends.etcd
)

// passwordEnv holds the etcd password, if any.
const passwordEnv = "FXELECTION_ETCD_PASSWORD"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// backend is the etcd module's flags.
var backend = exampleapp.Backend{
	Module: "fxelection.backends.etcd",
	Flags: func(fs *flag.FlagSet) func(func(string) (string, bool)) map[string]any {
		endpoints := fs.String("endpoints", "localhost:2379", "etcd endpoints, comma-separated (host:port or http(s)://host:port)")
		username := fs.String("username", "", "etcd user name (password from $"+passwordEnv+")")
		prefix := fs.String("prefix", "", "key prefix (default fxelection/)")
		return func(lookupEnv func(string) (string, bool)) map[string]any {
			s := map[string]any{"endpoints": strings.Split(*endpoints, ",")}
			if *username != "" {
				s["username"] = *username
			}
			if _, ok := lookupEnv(passwordEnv); ok {
				s["password"] = "{env." + passwordEnv + "}" // resolved and redacted by the config package
			}
			if *prefix != "" {
				s["prefix"] = *prefix
			}
			return s
		}
	},
}

// run is main without the process (exampleapp.Run).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return exampleapp.Run(ctx, "example", backend, args, stdout, stderr, lookupEnv)
}
