package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// usageError is bad input: main prints it on one line and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// options are the parsed command line.
type options struct {
	status bool // the "status" subcommand

	backend       string
	election      string
	id            string
	lease         time.Duration
	renewDeadline time.Duration
	retry         time.Duration
	workInterval  time.Duration
	stopTimeout   time.Duration
	httpAddr      string
	logFormat     string
	demoDuration  time.Duration

	redisAddr, redisUser, redisPassword string
	redisDB                             int
	redisTLS                            bool
	postgresDSN                         string
	s3Endpoint, s3Bucket                string
	s3AccessKey, s3SecretKey, s3Region  string
	s3Insecure                          bool
	blobConnectionString, blobContainer string
	cacheOptions                        // memcached and nats: cache_flags.go
}

// demo reports whether to run the in-process demo: no backend chosen.
func (o options) demo() bool { return o.backend == "" && !o.status }

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "FXELECTION_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("example-app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.backend, "backend", "", "backend: "+strings.Join(fxelection.Backends(), "|")+" (none: run the in-process demo)")
	fs.StringVar(&o.election, "election", "example", "election name")
	fs.StringVar(&o.id, "id", "", "candidate identity (default: host-pid-random)")
	fs.DurationVar(&o.lease, "lease", 15*time.Second, "lease duration")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", 10*time.Second, "renew deadline (shorter than --lease)")
	fs.DurationVar(&o.retry, "retry", 2*time.Second, "retry period")
	fs.DurationVar(&o.workInterval, "work-interval", time.Second, "how often the leader does its work")
	fs.DurationVar(&o.stopTimeout, "stop-timeout", 10*time.Second, "bound on graceful stop")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "HTTP address for /metrics, /healthz, /readyz, /leader (empty: off)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text|json")
	fs.DurationVar(&o.demoDuration, "demo-duration", 0, "stop the demo after this long (0: until Ctrl-C)")
	fs.StringVar(&o.redisAddr, "redis-addr", "", "Redis address host:port")
	fs.StringVar(&o.redisUser, "redis-username", "", "Redis ACL user name")
	fs.StringVar(&o.redisPassword, "redis-password", "", "Redis password")
	fs.IntVar(&o.redisDB, "redis-db", 0, "Redis database number")
	fs.BoolVar(&o.redisTLS, "redis-tls", false, "use TLS to Redis")
	fs.StringVar(&o.postgresDSN, "postgres-dsn", "", "PostgreSQL connection string")
	fs.StringVar(&o.s3Endpoint, "s3-endpoint", "", "S3 endpoint host:port")
	fs.StringVar(&o.s3Bucket, "s3-bucket", "", "S3 bucket holding the lease objects (must exist)")
	fs.StringVar(&o.s3AccessKey, "s3-access-key", "", "S3 access key")
	fs.StringVar(&o.s3SecretKey, "s3-secret-key", "", "S3 secret key")
	fs.StringVar(&o.s3Region, "s3-region", "", "S3 region")
	fs.BoolVar(&o.s3Insecure, "s3-insecure", false, "plain HTTP to S3 (e.g. a local MinIO)")
	fs.StringVar(&o.blobConnectionString, "blob-connection-string", "", "Azure Storage connection string")
	fs.StringVar(&o.blobContainer, "blob-container", "", "Azure Blob container holding the lease blobs (must exist)")
	addCacheFlags(fs, &o.cacheOptions)
	return fs
}

// parseArgs parses args (without the program name), with FXELECTION_*
// environment variables as defaults for flags not given.
func parseArgs(args []string, getenv func(string) string) (options, error) {
	var o options
	if len(args) > 0 && args[0] == "status" {
		o.status = true
		args = args[1:]
	}
	fs := newFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{strings.Replace(err.Error(), "flag -", "flag --", 1)}
	}
	if fs.NArg() > 0 {
		return o, usagef("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(envName(f.Name))
		if given[f.Name] || v == "" || envErr != nil {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = usagef("invalid value %q for %s (--%s): %v", v, envName(f.Name), f.Name, err)
		}
	})
	if envErr != nil {
		return o, envErr
	}
	if o.id == "" {
		o.id = fxelection.DefaultIdentity()
	}
	return o, o.validate()
}

func (o options) validate() error {
	switch o.logFormat {
	case "text", "json":
	default:
		return usagef("--log-format: %q is not text or json", o.logFormat)
	}
	if o.workInterval <= 0 {
		return usagef("--work-interval (%v) must be positive", o.workInterval)
	}
	if o.stopTimeout <= 0 {
		return usagef("--stop-timeout (%v) must be positive", o.stopTimeout)
	}
	if o.demo() {
		return nil
	}
	if o.backend == "" {
		return usagef("--backend is required for status")
	}
	if _, ok := fxelection.LookupBackend(o.backend); !ok {
		return usagef("--backend: unknown backend %q (registered: %s)", o.backend, strings.Join(fxelection.Backends(), ", "))
	}
	switch o.backend {
	case "redis":
		if o.redisAddr == "" {
			return usagef("--redis-addr is required for --backend redis")
		}
	case "postgres":
		if o.postgresDSN == "" {
			return usagef("--postgres-dsn is required for --backend postgres")
		}
	case "blob":
		if o.blobConnectionString == "" {
			return usagef("--blob-connection-string is required for --backend blob")
		}
		if o.blobContainer == "" {
			return usagef("--blob-container is required for --backend blob")
		}
		if o.lease < 15*time.Second || o.lease > 60*time.Second {
			return usagef("--lease (%v) must be between 15s and 60s for --backend blob (Azure lease limits)", o.lease)
		}
	case "memcached", "nats":
		if err := o.cacheOptions.validate(o.backend, o.lease); err != nil {
			return err
		}
	case "s3":
		if o.s3Endpoint == "" {
			return usagef("--s3-endpoint is required for --backend s3")
		}
		if o.s3Bucket == "" {
			return usagef("--s3-bucket is required for --backend s3")
		}
	}
	if err := o.config().Validate(); err != nil {
		return usageError{flagNames().Replace(strings.TrimPrefix(err.Error(), "fxelection: "))}
	}
	return nil
}

// flagNames turns Config field names in validation errors into flag names.
func flagNames() *strings.Replacer {
	return strings.NewReplacer(
		"Name", "--election", "Identity", "--id", "LeaseDuration", "--lease",
		"RenewDeadline", "--renew-deadline", "RetryPeriod", "--retry", "StopTimeout", "--stop-timeout",
	)
}

// config is the elector configuration the flags describe.
func (o options) config() fxelection.Config {
	return fxelection.Config{
		Name:          o.election,
		Identity:      o.id,
		Metadata:      map[string]string{"http": o.httpAddr},
		LeaseDuration: o.lease,
		RenewDeadline: o.renewDeadline,
		RetryPeriod:   o.retry,
		MaxBackoff:    max(fxelection.DefaultMaxBackoff, o.retry),
		StopTimeout:   o.stopTimeout,
	}
}

// settings are the registry settings for the chosen backend. They hold
// secrets: never log them.
func (o options) settings() fxelection.Settings {
	switch o.backend {
	case "redis":
		return fxelection.Settings{
			"addr": o.redisAddr, "username": o.redisUser, "password": o.redisPassword,
			"db": fmt.Sprint(o.redisDB), "tls": fmt.Sprint(o.redisTLS),
		}
	case "postgres":
		return fxelection.Settings{"dsn": o.postgresDSN}
	case "memcached", "nats":
		return o.cacheOptions.settings(o.backend)
	case "blob":
		return fxelection.Settings{"connection_string": o.blobConnectionString, "container": o.blobContainer}
	case "s3":
		return fxelection.Settings{
			"endpoint": o.s3Endpoint, "bucket": o.s3Bucket, "access_key": o.s3AccessKey,
			"secret_key": o.s3SecretKey, "region": o.s3Region, "secure": fmt.Sprint(!o.s3Insecure),
		}
	}
	return fxelection.Settings{}
}

func printUsage(w io.Writer) {
	var o options
	fs := newFlagSet(&o)
	fs.SetOutput(w)
	fmt.Fprintf(w, "usage: example-app [status] [flags]\n\nWith no --backend, runs a three-candidate demo on the in-memory backend.\nEvery flag can also be set with FXELECTION_<FLAG> (e.g. FXELECTION_REDIS_ADDR).\n\n")
	fs.PrintDefaults()
}
