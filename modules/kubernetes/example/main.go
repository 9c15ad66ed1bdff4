// Command example is example-app for the Kubernetes backend. It lives in
// the kubernetes module, not in example-app, so that the root module never
// depends on client-go; it takes the same path as example-app --backend X
// (internal/exampleapp): the flags become a configuration document (one
// election on fxelection.backends.kubernetes plus the
// fxelection.extensions.metrics extension), or --config FILE runs a
// document of your own, and the app serves /metrics, /healthz, /readyz and
// /leader and logs "leadership acquired", "leadership lost", "leader
// observed" and "election error" as example-app does.
//
//	cd modules/kubernetes
//	go run ./example --kubeconfig ~/.kube/config --namespace default --id a --http 127.0.0.1:8080
//	go run ./example --kubeconfig ~/.kube/config --namespace default --id b --http 127.0.0.1:8081
//
// In a pod, without --kubeconfig and --server, it uses the pod's service
// account. A bearer token comes from the environment only
// (FXELECTION_KUBE_TOKEN), so it shows neither in the process list nor in
// the document.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fxelection/fxelection/internal/exampleapp"
	_ "github.com/fxelection/fxelection/modules/kubernetes" // registers fxelection.backends.kubernetes
)

// tokenEnv holds the bearer token, if any.
const tokenEnv = "FXELECTION_KUBE_TOKEN"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// backend is the kubernetes module's flags.
var backend = exampleapp.Backend{
	Module: "fxelection.backends.kubernetes",
	Flags: func(fs *flag.FlagSet) func(func(string) (string, bool)) map[string]any {
		kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, unless --server)")
		kubeContext := fs.String("context", "", "kubeconfig context (default: its current one)")
		server := fs.String("server", "", "API server URL, https:// (token from $"+tokenEnv+")")
		caFile := fs.String("ca-file", "", "CA certificates of the API server, PEM (with --server)")
		namespace := fs.String("namespace", "", "namespace of the Lease (default: default)")
		return func(lookupEnv func(string) (string, bool)) map[string]any {
			s := map[string]any{}
			for key, v := range map[string]string{
				"kubeconfig": *kubeconfig, "context": *kubeContext, "server": *server, "ca_file": *caFile, "namespace": *namespace,
			} {
				if v != "" {
					s[key] = v
				}
			}
			if _, ok := lookupEnv(tokenEnv); ok {
				s["token"] = "{env." + tokenEnv + "}" // resolved and redacted by the config package
			}
			return s
		}
	},
}

// run is main without the process (exampleapp.Run).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return exampleapp.Run(ctx, "example", backend, args, stdout, stderr, lookupEnv)
}
