// Command example is example-app for the DynamoDB backend. It lives in the
// dynamodb module, not in example-app, so that the root module never
// depends on aws-sdk-go-v2; it takes the same path as example-app --backend
// X (internal/exampleapp): the flags become a configuration document (one
// election on fxelection.backends.dynamodb plus the
// fxelection.extensions.metrics extension), or --config FILE runs a
// document of your own, and the app serves /metrics, /healthz, /readyz and
// /leader and logs "leadership acquired", "leadership lost", "leader
// observed" and "election error" as example-app does.
//
//	cd modules/dynamodb
//	go run ./example --region eu-west-1 --table fxelection --id a --http 127.0.0.1:8080
//	go run ./example --region eu-west-1 --table fxelection --id b --http 127.0.0.1:8081
//
// Credentials come from the SDK's default chain, or from the environment
// only (FXELECTION_DYNAMODB_ACCESS_KEY_ID and
// FXELECTION_DYNAMODB_SECRET_ACCESS_KEY), so they show neither in the
// process list nor in the document.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fxelection/fxelection/internal/exampleapp"
	_ "github.com/fxelection/fxelection/modules/dynamodb" // registers fxelection.backends.dynamodb
)

// The environment variables of static credentials, if any.
const (
	accessKeyEnv = "FXELECTION_DYNAMODB_ACCESS_KEY_ID"
	secretKeyEnv = "FXELECTION_DYNAMODB_SECRET_ACCESS_KEY"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// backend is the dynamodb module's flags.
var backend = exampleapp.Backend{
	Module: "fxelection.backends.dynamodb",
	Flags: func(fs *flag.FlagSet) func(func(string) (string, bool)) map[string]any {
		region := fs.String("region", "", "AWS region (required)")
		table := fs.String("table", "fxelection", "table of the leases (created if missing, unless --skip-create-table)")
		endpoint := fs.String("endpoint", "", "endpoint URL (DynamoDB Local, say; default: the region's)")
		skipCreate := fs.Bool("skip-create-table", false, "never create the table")
		return func(lookupEnv func(string) (string, bool)) map[string]any {
			s := map[string]any{"region": *region, "table": *table}
			if *endpoint != "" {
				s["endpoint"] = *endpoint
			}
			if *skipCreate {
				s["skip_create_table"] = true
			}
			if _, ok := lookupEnv(accessKeyEnv); ok {
				s["access_key_id"] = "{env." + accessKeyEnv + "}"
			}
			if _, ok := lookupEnv(secretKeyEnv); ok {
				s["secret_access_key"] = "{env." + secretKeyEnv + "}" // resolved and redacted by the config package
			}
			return s
		}
	},
}

// run is main without the process (exampleapp.Run).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return exampleapp.Run(ctx, "example", backend, args, stdout, stderr, lookupEnv)
}
