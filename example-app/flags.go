package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	memcachedlease "github.com/fxelection/fxelection/modules/cache/memcached"
	natslease "github.com/fxelection/fxelection/modules/cache/nats"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

// usageError is bad input: main prints it on one line and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Bounds on the example's durations.
const (
	// minRetryPeriod is the lower bound Config.RetryPeriod documents: each
	// retry is a store round trip, so a shorter period floods the store.
	minRetryPeriod = 10 * time.Millisecond
	// minWorkInterval keeps the leader's demo work (one log line each) from
	// flooding the log.
	minWorkInterval = 10 * time.Millisecond
	// maxDuration bounds every duration flag: a lease longer than a record
	// may state is rejected by every reader, and with every duration at most
	// a year no sum or multiple the program or the core computes overflows.
	maxDuration = backendkit.MaxRecordDuration
	// minHealthInterval is Config.Health.Interval's lower bound.
	minHealthInterval = 10 * time.Millisecond
	// maxHealthThreshold bounds --health-threshold: more failures in a row
	// than this before resigning is no health check.
	maxHealthThreshold = 1000
)

// options are the parsed command line.
type options struct {
	status   bool // the "status" subcommand
	modules  bool // the "modules" subcommand: list registered modules
	validate bool // the "validate" subcommand: check --config, run nothing
	reload   bool // the "reload" subcommand: POST --config to --admin
	run      bool // the "run" subcommand: --config, as without it
	exec     bool // the "exec" subcommand: run argv while leader
	// help is the command "help COMMAND" asks about ("" for the program).
	help string

	// configFile is --config: a configuration document to run instead of
	// the one election the per-election flags describe.
	configFile string
	watch      bool // status --watch: follow the leader until interrupted
	// adminAddr is --admin: the admin endpoint's address with --config,
	// "unix/PATH" or host:port ("" when off); adminRemote allows a
	// non-loopback TCP one; adminMode is a unix socket's permission bits.
	adminAddr   string
	adminRemote bool
	adminMode   os.FileMode
	// The admin credential: a file holding the token, or the token itself
	// (from FXELECTION_ADMIN_TOKEN only).
	adminTokenFile, adminToken string
	// adminAllowPlaceholders resolves placeholders in loaded documents.
	adminAllowPlaceholders bool

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

	// The one election's health check (flags mode): a shell command,
	// the wait between checks, the failures in a row that make it
	// unhealthy.
	healthCmd       string
	healthInterval  time.Duration
	healthThreshold int
	// exec's: the command after "--", the grace between SIGTERM and
	// SIGKILL, and the restart policy.
	argv      []string
	killAfter time.Duration
	restart   string

	redisAddr, redisUser, redisPassword string
	redisDB                             int
	redisTLS                            bool
	postgresDSN                         string
	s3Endpoint, s3Bucket                string
	s3AccessKey, s3SecretKey, s3Region  string
	s3Insecure                          bool
	blobConnectionString, blobContainer string
	memcachedAddr                       string
	natsURL, natsUser, natsPassword     string
	natsToken, natsBucket               string
	natsReplicas                        int

	// fromEnv maps a flag name to the environment variable that set it, for
	// flags not given on the command line.
	fromEnv map[string]string
	// given are the flags set on the command line or from the environment.
	given map[string]bool
}

// flagDef is one flag of the table below. A backend's flags name the
// backend and the setting (the key in its module's configuration) they feed;
// the flags' configuration document (documentJSON) and the required
// checks are derived from the table, so adding a backend is adding rows.
type flagDef struct {
	name  string
	usage string
	// value parses, validates (Set fails on a bad value) and stores into an
	// options field; its kind (durationFlag, intFlag, addrFlag, …) carries
	// the rule.
	value flag.Value
	// backend is the backend whose settings the flag feeds ("" for none).
	backend string
	// setting is the key in that backend module's settings (its JSON key in
	// a configuration document; the flat registry's name too).
	setting string
	// toSetting converts the flag's text to the setting's (nil: as is).
	toSetting func(string) string
	// required: the backend cannot run without it.
	required bool
	// secret: the value is never echoed, and it is withheld from any error
	// a backend returns.
	secret bool
	// envOnly: the value is taken only from the flag's environment
	// variable; on the command line, which other users can read, it is
	// refused.
	envOnly bool
}

// flagTable defines every flag, bound to o's fields.
func (o *options) flagTable() []flagDef {
	return []flagDef{
		{name: "config", value: textFlag{&o.configFile}, usage: "configuration file (JSON; YAML if named .yaml or .yml): run every election it describes (excludes the per-election flags)"},
		{name: "backend", value: choiceFlag{&o.backend, backendNames, true},
			usage: "backend: " + strings.Join(backendNames(), "|") + " (module fxelection.backends.<name>; none: run the in-process demo)"},
		{name: "election", value: textFlag{&o.election}, usage: "election name"},
		{name: "id", value: textFlag{&o.id}, usage: "candidate identity (default: host-pid-random)"},
		{name: "lease", value: durationFlag{p: &o.lease}, usage: "lease duration"},
		{name: "renew-deadline", value: durationFlag{p: &o.renewDeadline}, usage: "renew deadline (shorter than --lease)"},
		{name: "retry", value: durationFlag{p: &o.retry, min: minRetryPeriod}, usage: "retry period"},
		{name: "work-interval", value: durationFlag{p: &o.workInterval, min: minWorkInterval}, usage: "how often the leader does its work"},
		{name: "stop-timeout", value: durationFlag{p: &o.stopTimeout}, usage: "bound on graceful stop"},
		{name: "http", value: addrFlag{p: &o.httpAddr}, usage: "HTTP address host:port for /metrics, /healthz, /readyz, /leader (empty: off)"},
		{name: "log-format", value: choiceFlag{&o.logFormat, func() []string { return []string{"text", "json"} }, false}, usage: "log format: text|json"},
		{name: "demo-duration", value: durationFlag{p: &o.demoDuration, zeroOK: true}, usage: "stop the demo after this long (0: until Ctrl-C)"},
		{name: "admin", value: adminFlag{&o.adminAddr},
			usage: "admin endpoint with --config (GET /config, POST /load, POST /resign; reload's target): unix/PATH, a unix socket whose bits are --admin-socket-mode, or host:port, TCP, which needs --admin-token-file or FXELECTION_ADMIN_TOKEN and is loopback only unless --admin-remote; off: none. Whoever reaches it controls the process"},
		{name: "admin-remote", value: boolFlag{&o.adminRemote}, usage: "allow a TCP --admin on a non-loopback address: whoever reaches it with the token can replace the running configuration"},
		{name: "admin-socket-mode", value: modeFlag{&o.adminMode},
			usage: "with a unix/PATH --admin: the socket's permission bits, octal, nothing for others; whoever may write it may use the endpoint (0660: the socket's group too)"},
		{name: "admin-token-file", value: textFlag{&o.adminTokenFile},
			usage: "file holding the admin token (16 to 4096 printable bytes): every admin request must carry \"Authorization: Bearer TOKEN\", and reload sends it; required for a TCP --admin"},
		{name: "admin-token", value: textFlag{&o.adminToken}, secret: true, envOnly: true,
			usage: "the admin token itself, as --admin-token-file's; from the environment only (the command line is visible to every user)"},
		{name: "admin-allow-placeholders", value: boolFlag{&o.adminAllowPlaceholders},
			usage: "resolve {env.NAME} and {file.PATH} placeholders in documents loaded through the admin endpoint (refused by default: a loaded document could otherwise read any file or variable this process can)"},
		{name: "watch", value: boolFlag{&o.watch}, usage: "with status: print the leader on every change until interrupted (reads every --retry)"},
		{name: "health-cmd", value: textFlag{&o.healthCmd},
			usage: "campaign only while this command, run by /bin/sh in its own process group and killed after --health-interval, exits 0; a leader whose check fails --health-threshold times in a row resigns"},
		{name: "health-interval", value: durationFlag{p: &o.healthInterval, zeroOK: true, min: minHealthInterval},
			usage: "with --health-cmd: the wait between checks and each check's bound (default: --retry)"},
		{name: "health-threshold", value: intFlag{p: &o.healthThreshold, min: 0, max: maxHealthThreshold},
			usage: "with --health-cmd: failed checks in a row that make the candidate unhealthy (0: the default, 3)"},
		{name: "kill-after", value: durationFlag{p: &o.killAfter, zeroOK: true},
			usage: "with exec: SIGKILL the child's process group this long after SIGTERM (default and maximum: --lease − --renew-deadline less a margin of 10% of it, at least 100ms; 0: at once)"},
		{name: "restart", value: choiceFlag{&o.restart, restartPolicies, false},
			usage: "with exec: restart the child after it exits while leader: " + strings.Join(restartPolicies(), "|")},

		{name: "redis-addr", value: addrFlag{p: &o.redisAddr, list: true}, backend: "redis", setting: "addr", required: true,
			usage: "Redis address host:port (comma-separated for Cluster)"},
		{name: "redis-username", value: textFlag{&o.redisUser}, backend: "redis", setting: "username", usage: "Redis ACL user name"},
		{name: "redis-password", value: textFlag{&o.redisPassword}, backend: "redis", setting: "password", secret: true, usage: "Redis password"},
		{name: "redis-db", value: intFlag{p: &o.redisDB, check: redislease.ValidateDB}, backend: "redis", setting: "db",
			usage: fmt.Sprintf("Redis database number (0–%d)", redislease.MaxDB)},
		{name: "redis-tls", value: boolFlag{&o.redisTLS}, backend: "redis", setting: "tls", usage: "use TLS to Redis"},
		{name: "postgres-dsn", value: textFlag{&o.postgresDSN}, backend: "postgres", setting: "dsn", required: true, secret: true,
			usage: "PostgreSQL connection string"},
		{name: "s3-endpoint", value: textFlag{&o.s3Endpoint}, backend: "s3", setting: "endpoint", required: true, usage: "S3 endpoint host:port"},
		{name: "s3-bucket", value: textFlag{&o.s3Bucket}, backend: "s3", setting: "bucket", required: true,
			usage: "S3 bucket holding the lease objects (must exist)"},
		{name: "s3-access-key", value: textFlag{&o.s3AccessKey}, backend: "s3", setting: "access_key", usage: "S3 access key"},
		{name: "s3-secret-key", value: textFlag{&o.s3SecretKey}, backend: "s3", setting: "secret_key", secret: true, usage: "S3 secret key"},
		{name: "s3-region", value: textFlag{&o.s3Region}, backend: "s3", setting: "region", usage: "S3 region"},
		{name: "s3-insecure", value: boolFlag{&o.s3Insecure}, backend: "s3", setting: "secure", toSetting: negate,
			usage: "plain HTTP to S3 (e.g. a local MinIO)"},
		{name: "blob-connection-string", value: textFlag{&o.blobConnectionString}, backend: "blob", setting: "connection_string",
			required: true, secret: true, usage: "Azure Storage connection string"},
		{name: "blob-container", value: textFlag{&o.blobContainer}, backend: "blob", setting: "container", required: true,
			usage: "Azure Blob container holding the lease blobs (must exist)"},
		{name: "memcached-addr", value: addrFlag{p: &o.memcachedAddr, list: true}, backend: "memcached", setting: "addr", required: true,
			usage: "memcached servers host:port, comma-separated"},
		{name: "nats-url", value: textFlag{&o.natsURL}, backend: "nats", setting: "url", required: true, secret: true,
			usage: "NATS server URLs, comma-separated (nats://host:4222)"},
		{name: "nats-username", value: textFlag{&o.natsUser}, backend: "nats", setting: "username", usage: "NATS user name"},
		{name: "nats-password", value: textFlag{&o.natsPassword}, backend: "nats", setting: "password", secret: true, usage: "NATS password"},
		{name: "nats-token", value: textFlag{&o.natsToken}, backend: "nats", setting: "token", secret: true, usage: "NATS authentication token"},
		{name: "nats-bucket", value: textFlag{&o.natsBucket}, backend: "nats", setting: "bucket",
			usage: "NATS JetStream KV bucket (created if missing)"},
		{name: "nats-replicas", value: intFlag{p: &o.natsReplicas, min: 1, max: 5}, backend: "nats", setting: "replicas",
			usage: "replicas of the KV bucket when it is created (1-5)"},
	}
}

// backendRules are checks specific to one backend beyond its required flags.
var backendRules = map[string]func(o options) error{
	"blob": func(o options) error {
		if o.lease < 15*time.Second || o.lease > 60*time.Second {
			return usagef("%s (%v) must be between 15s and 60s for --backend blob (Azure lease limits)", o.label("lease"), o.lease)
		}
		return nil
	},
	"memcached": func(o options) error {
		if o.lease > memcachedlease.MaxLease {
			return usagef("%s (%v) must be at most %v for --backend memcached (memcached TTL limit)", o.label("lease"), o.lease, memcachedlease.MaxLease)
		}
		return nil
	},
	"nats": func(o options) error {
		if !natslease.ValidBucket(o.natsBucket) {
			return usagef("%s: not a bucket name (A-Z a-z 0-9 _ -)", o.label("nats-bucket"))
		}
		return nil
	},
}

func negate(v string) string { return strconv.FormatBool(v != "true") }

// defaults returns the options every flag starts from: the timings are
// fxelection.Timing's defaults.
func defaults() options {
	timing := fxelection.Timing{}.WithDefaults()
	return options{
		election:      "example",
		lease:         timing.LeaseDuration,
		renewDeadline: timing.RenewDeadline,
		retry:         timing.RetryPeriod,
		workInterval:  time.Second,
		stopTimeout:   10 * time.Second,
		httpAddr:      "127.0.0.1:8080",
		adminAddr:     defaultAdmin,
		adminMode:     defaultSocketMode,
		logFormat:     "text",
		natsBucket:    natslease.DefaultBucket,
		natsReplicas:  1,
		restart:       "never",
	}
}

// demo reports whether to run the in-process demo: no backend chosen.
func (o options) demo() bool { return o.backend == "" && !o.status }

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "FXELECTION_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// label names flag name in messages, with the environment variable that
// set it if it did.
func (o options) label(name string) string {
	if env := o.fromEnv[name]; env != "" {
		return "--" + name + " from " + env
	}
	return "--" + name
}

// recorder wraps a flag's value so that a failed Set is reported with our
// message (naming the flag with two dashes, echoing only what is safe)
// instead of the flag package's.
type recorder struct {
	flag.Value
	name string
	fail *setFailure
}

type setFailure struct {
	name string
	err  error
}

func (r recorder) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil && r.fail.err == nil {
		*r.fail = setFailure{r.name, err}
	}
	return err
}

// IsBoolFlag tells the flag package that a bool flag needs no argument.
func (r recorder) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseArgs parses args (without the program name), with FXELECTION_*
// environment variables as defaults for flags not given.
func parseArgs(args []string, getenv func(string) string) (options, error) {
	o := defaults()
	o.fromEnv = map[string]string{}
	if len(args) > 0 && args[0] == "help" {
		if len(args) > 2 {
			return o, usagef("help takes one command at most (got %s)", show(args[2]))
		}
		if len(args) == 2 {
			o.help = args[1]
			if isHelpFlag(o.help) {
				o.help = "help"
			}
			if commandHelp(o.help) == nil {
				return o, usagef("help: unknown command %s (commands: %s)", show(args[1]), strings.Join(commandNames(), ", "))
			}
		}
		return o, flag.ErrHelp
	}
	switch {
	case len(args) > 0 && args[0] == "status":
		o.status = true
		args = args[1:]
	case len(args) > 0 && args[0] == "validate":
		o.validate = true
		args = args[1:]
	case len(args) > 0 && args[0] == "reload":
		o.reload = true
		args = args[1:]
	case len(args) > 0 && args[0] == "run":
		o.run = true
		args = args[1:]
	case len(args) > 0 && args[0] == "exec":
		o.exec = true
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "modules" {
		o.modules = true
		args = args[1:]
		if len(args) > 0 && isHelpFlag(args[0]) {
			o.help = "modules"
			return o, flag.ErrHelp
		}
		if len(args) > 0 {
			return o, usagef("modules takes no arguments or flags (got %s)", show(args[0]))
		}
		return o, nil
	}
	fs := flag.NewFlagSet("example-app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var fail setFailure
	table := o.flagTable()
	for _, d := range table {
		fs.Var(recorder{d.value, d.name, &fail}, d.name, d.usage)
	}
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			switch {
			case o.status:
				o.help = "status"
			case o.validate:
				o.help = "validate"
			case o.reload:
				o.help = "reload"
			case o.run:
				o.help = "run"
			case o.exec:
				o.help = "exec"
			}
			return o, err
		case fail.err != nil:
			return o, valueProblem(o.label(fail.name), fail.err)
		}
		return o, parseProblem(err)
	}
	if o.exec {
		argv, err := execCommand(args, fs.Args())
		if err != nil {
			return o, err
		}
		o.argv = argv
	} else if fs.NArg() > 0 {
		return o, usagef("unexpected argument %s", show(fs.Arg(0)))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, d := range table {
		env := envName(d.name)
		v := getenv(env)
		if given[d.name] || v == "" {
			continue
		}
		o.fromEnv[d.name] = env
		given[d.name] = true
		if err := d.value.Set(v); err != nil {
			return o, valueProblem(o.label(d.name), err)
		}
	}
	o.given = given
	if o.id == "" {
		o.id = fxelection.DefaultIdentity()
	}
	return o, o.check()
}

// isHelpFlag reports whether arg asks for help as the flag package's -h
// does.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

// parseProblem rewrites the flag package's own errors (unknown flag,
// missing value) to name flags with two dashes.
func parseProblem(err error) error {
	msg := err.Error()
	for _, p := range []struct{ prefix, format string }{
		{"flag provided but not defined: -", "unknown flag --%s"},
		{"flag needs an argument: -", "--%s needs a value"},
	} {
		if name, ok := strings.CutPrefix(msg, p.prefix); ok {
			return usagef(p.format, oneLine(backendkit.RedactText(name)))
		}
	}
	return usageError{oneLine(backendkit.RedactText(msg))}
}

// withConfig are the flags that work with --config: they concern the
// process, not an election.
var withConfig = map[string]bool{"config": true, "http": true, "log-format": true, "work-interval": true,
	"admin": true, "admin-remote": true, "admin-socket-mode": true, "admin-token-file": true, "admin-token": true, "admin-allow-placeholders": true}

// execWithConfig are the flags that work with exec --config: the
// process's, the choice of the document's election, and exec's own.
var execWithConfig = map[string]bool{"config": true, "http": true, "log-format": true, "election": true, "kill-after": true, "restart": true}

// execOnly are the flags that only exec takes.
var execOnly = map[string]bool{"kill-after": true, "restart": true}

// notForExec are the flags exec refuses: it runs no demo and no leader
// work of its own.
var notForExec = map[string]bool{"work-interval": true, "demo-duration": true, "watch": true}

// validateOnly are the flags "validate" takes.
var validateOnly = map[string]bool{"config": true}

// adminFlags are the admin endpoint's flags: for --config runs (and
// reload's target), ignored elsewhere when they come from the environment.
var adminFlags = map[string]bool{"admin": true, "admin-remote": true, "admin-socket-mode": true, "admin-token-file": true, "admin-token": true,
	"admin-allow-placeholders": true}

// reloadOnly are the flags "reload" takes.
var reloadOnly = map[string]bool{"config": true, "admin": true, "admin-token-file": true, "admin-token": true}

func (o options) check() error {
	for _, d := range o.flagTable() {
		if d.envOnly && o.given[d.name] && o.fromEnv[d.name] == "" {
			return usagef("--%s is not taken on the command line, which every user can read: set %s", d.name, envName(d.name))
		}
	}
	switch {
	case o.validate:
		return o.onlyFlags("validate", validateOnly, "--config")
	case o.reload:
		if err := o.onlyFlags("reload", reloadOnly, "--config, --admin and --admin-token-file"); err != nil {
			return err
		}
		if o.adminAddr == "" {
			return usagef("%s: reload needs the admin endpoint's address", o.label("admin"))
		}
		return o.checkAdmin()
	case o.run && o.configFile == "":
		return usagef("--config is required for run")
	}
	for _, d := range o.flagTable() {
		switch {
		case !o.exec && execOnly[d.name] && o.given[d.name]:
			return usagef("%s works only with exec", o.label(d.name))
		case o.exec && notForExec[d.name] && o.given[d.name]:
			return usagef("%s does not work with exec", o.label(d.name))
		case o.exec && adminFlags[d.name] && o.given[d.name] && o.fromEnv[d.name] == "":
			// exec runs one election: there is nothing to reload.
			return usagef("%s does not work with exec", o.label(d.name))
		}
	}
	if o.configFile != "" {
		if !o.exec && !o.status {
			if err := o.checkAdmin(); err != nil {
				return err
			}
		}
		if o.status {
			return usagef("--config does not work with status (use --backend and its flags)")
		}
		allowed := withConfig
		if o.exec {
			allowed = execWithConfig
		}
		for _, d := range o.flagTable() {
			if o.given[d.name] && !allowed[d.name] && !adminFlags[d.name] {
				return usagef("%s conflicts with --config: set it in the configuration file", o.label(d.name))
			}
		}
		return nil
	}
	for name := range adminFlags {
		// Only the command line counts: FXELECTION_ADMIN meant for runs
		// with --config does not break the others.
		if o.given[name] && o.fromEnv[name] == "" {
			return usagef("--%s works only with --config", name)
		}
	}
	if o.exec && o.backend == "" {
		return usagef("--backend or --config is required for exec")
	}
	for _, name := range []string{"health-cmd", "health-interval", "health-threshold"} {
		switch {
		case o.given[name] && (o.status || o.backend == ""):
			return usagef("%s works only when campaigning with --backend (or exec)", o.label(name))
		case o.given[name] && name != "health-cmd" && o.healthCmd == "":
			return usagef("%s works only with --health-cmd", o.label(name))
		}
	}
	if o.status && o.backend == "" {
		return usagef("--backend is required for status")
	}
	if o.watch && !o.status {
		return usagef("--watch works only with status")
	}
	for _, d := range o.flagTable() {
		if d.backend == o.backend && d.required && d.value.String() == "" {
			return usagef("--%s is required for --backend %s", d.name, o.backend)
		}
	}
	if rule := backendRules[o.backend]; rule != nil {
		if err := rule(o); err != nil {
			return err
		}
	}
	// The core's rules (names, the ordering of the durations), in every
	// mode: the demo validates its flags too.
	if err := o.config().Validate(); err != nil {
		return usageError{o.coreProblem(err)}
	}
	if o.exec {
		return o.checkKillAfter(o.lease, o.renewDeadline, "--lease − --renew-deadline")
	}
	return nil
}

// checkAdmin checks the admin endpoint's flags, for the server (run) and
// for reload, its client: a TCP endpoint needs a credential, a non-loopback
// one --admin-remote (the server's), and the socket's mode goes with a unix
// socket only.
func (o options) checkAdmin() error {
	if o.adminAddr == "" {
		return nil
	}
	if o.adminTokenFile != "" && o.adminToken != "" {
		return usagef("%s conflicts with FXELECTION_ADMIN_TOKEN: give the token once", o.label("admin-token-file"))
	}
	if _, ok := socketPath(o.adminAddr); ok {
		if o.given["admin-remote"] && o.fromEnv["admin-remote"] == "" {
			return usagef("--admin-remote works only with a TCP --admin (host:port)")
		}
		return nil
	}
	if o.given["admin-socket-mode"] && o.fromEnv["admin-socket-mode"] == "" {
		return usagef("--admin-socket-mode works only with a unix socket --admin (unix/PATH)")
	}
	if o.adminTokenFile == "" && o.adminToken == "" {
		return usagef("%s: a TCP admin endpoint needs a credential: --admin-token-file FILE or FXELECTION_ADMIN_TOKEN (or a unix socket: --admin unix/PATH)", o.label("admin"))
	}
	if !o.reload && !o.adminRemote && !loopback(o.adminAddr) {
		return usagef("%s: not a loopback address; whoever reaches the admin endpoint can replace the configuration (add --admin-remote to allow it)", o.label("admin"))
	}
	return nil
}

// onlyFlags checks that a subcommand taking only the flags in allowed (and
// --config, required) got no other on the command line: FXELECTION_*
// variables meant for a run do not count.
func (o options) onlyFlags(cmd string, allowed map[string]bool, list string) error {
	for _, d := range o.flagTable() {
		if o.given[d.name] && !allowed[d.name] && o.fromEnv[d.name] == "" {
			return usagef("%s takes only %s (got --%s)", cmd, list, d.name)
		}
	}
	if o.configFile == "" {
		return usagef("--config is required for %s", cmd)
	}
	return nil
}

// configFlags maps the Config fields the flags set to the flags.
var configFlags = map[string]string{
	"Name": "election", "Identity": "id", "Metadata": "http", "LeaseDuration": "lease",
	"RenewDeadline": "renew-deadline", "RetryPeriod": "retry", "MaxBackoff": "retry", "StopTimeout": "stop-timeout",
}

// coreProblem turns a Config validation error into flag terms: a word that
// is exactly a Config field name becomes the flag's label. The core quotes
// no text value; quoted text (from elsewhere) is copied untouched, so a
// user's value is never rewritten.
func (o options) coreProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "fxelection: ")
	return oneLine(mapTokens(msg, func(word string) (string, bool) {
		if name, ok := configFlags[word]; ok {
			return o.label(name), true
		}
		return "", false
	}, nil))
}

// settingProblem turns a backend constructor's error into flag terms:
// `setting "addr"` becomes the flag that feeds the setting (--redis-addr).
// Secrets given on flags are withheld, and URL passwords and key=value
// secrets are redacted, whatever the backend put in its message.
func (o options) settingProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("fxelection: backend %q: ", o.backend))
	msg = strings.TrimPrefix(msg, string(backendModuleID(o.backend))+": ")
	mapped := false
	// A setting's key at the start of the message or of one of its
	// ": "-separated parts, before any quoted text ("addr: …",
	// "redislease: invalid options: db: …"): the message from there on,
	// with the flag in its place.
	if label, rest, ok := o.leadingSetting(msg); ok {
		msg, mapped = label+rest, true
	}
	msg = mapTokens(msg, nil, func(quoted string) (string, bool) {
		key, err := strconv.Unquote(quoted)
		if err != nil {
			return "", false
		}
		for _, d := range o.flagTable() {
			if d.backend == o.backend && d.setting == key {
				mapped = true
				return o.label(d.name), true
			}
		}
		return "", false
	})
	if !mapped {
		msg = "--backend " + o.backend + ": " + msg
	}
	red := backendkit.RedactText(msg, o.secrets()...)
	if !strings.Contains(red, "--") { // withheld entirely: still name the flag
		red = "--backend " + o.backend + ": " + red
	}
	return oneLine(red)
}

// leadingSetting finds the first part of msg (split at ": ", before any
// quote) that starts with "<setting>:" for a setting of the chosen backend,
// and returns the flag's label and what follows the setting's key.
func (o options) leadingSetting(msg string) (label, rest string, ok bool) {
	head := msg
	if i := strings.IndexAny(head, "\"`"); i >= 0 {
		head = head[:i]
	}
	for start := 0; start < len(head); {
		part := head[start:]
		if key, _, found := strings.Cut(part, ":"); found {
			if flag := o.settingFlag(key); flag != "" {
				return o.label(flag), msg[start+len(key):], true
			}
		}
		i := strings.Index(part, ": ")
		if i < 0 {
			break
		}
		start += i + 2
	}
	return "", "", false
}

// secrets are the values of the secret flags, withheld from every error.
func (o options) secrets() []string {
	var s []string
	for _, d := range o.flagTable() {
		if d.secret {
			s = append(s, d.value.String())
		}
	}
	return s
}

// mapTokens walks msg as words, quoted strings and other bytes. A word for
// which word returns true is replaced; a quoted string right after the word
// "setting " for which setting returns true replaces both. Nothing inside a
// quoted string is ever changed.
func mapTokens(msg string, word func(string) (string, bool), setting func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(msg); {
		c := msg[i]
		switch {
		case c == '"' || c == '`':
			q, err := strconv.QuotedPrefix(msg[i:])
			if err != nil { // unbalanced: copy the rest as is
				b.WriteString(msg[i:])
				return b.String()
			}
			i += len(q)
			b.WriteString(q)
		case isWordByte(c):
			j := i
			for j < len(msg) && isWordByte(msg[j]) {
				j++
			}
			w := msg[i:j]
			i = j
			if setting != nil && w == "setting" && strings.HasPrefix(msg[i:], ` "`) {
				if q, err := strconv.QuotedPrefix(msg[i+1:]); err == nil {
					if l, ok := setting(q); ok {
						b.WriteString(l)
						i += 1 + len(q)
						continue
					}
				}
			}
			if word != nil {
				if l, ok := word(w); ok {
					w = l
				}
			}
			b.WriteString(w)
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// config is the elector configuration the flags describe.
func (o options) config() fxelection.Config {
	return fxelection.Config{
		Name:     o.election,
		Identity: o.id,
		Metadata: map[string]string{"http": o.httpAddr},
		Timing: fxelection.Timing{
			LeaseDuration: o.lease,
			RenewDeadline: o.renewDeadline,
			RetryPeriod:   o.retry,
		},
		StopTimeout: o.stopTimeout,
		// The check itself is built from the document; its timing is
		// validated here with the rest.
		Health: fxelection.Health{
			Interval:  o.healthInterval,
			Threshold: o.healthThreshold,
		},
	}
}
