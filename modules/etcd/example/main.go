// Command example is example-app for the etcd backend. It lives in the etcd
// module, not in example-app, so that the root module never depends on etcd
// or gRPC; it takes the same path as example-app --backend X: the flags
// become a configuration document (one election on fxelection.backends.etcd
// plus the fxelection.extensions.metrics extension), or --config FILE runs
// a document of your own, and the app serves /metrics, /healthz, /readyz
// and /leader and logs "leadership acquired", "leadership lost", "leader
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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/metrics"
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

// options are the parsed flags.
type options struct {
	configFile, endpoints, username, prefix string
	election, id, httpAddr                  string
	lease, renewDeadline, retry             time.Duration
}

// run is main without the process: it runs until ctx is done and returns
// the exit code (2 for bad usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.configFile, "config", "", "configuration document to run (JSON; YAML if .yaml/.yml) instead of the flags' one election")
	fs.StringVar(&o.endpoints, "endpoints", "localhost:2379", "etcd endpoints, comma-separated (host:port or http(s)://host:port)")
	fs.StringVar(&o.username, "username", "", "etcd user name (password from $"+passwordEnv+")")
	fs.StringVar(&o.prefix, "prefix", "", "key prefix (default fxelection/)")
	fs.StringVar(&o.election, "election", "example", "election name")
	fs.StringVar(&o.id, "id", "", "candidate identity (default: host-pid-random)")
	fs.DurationVar(&o.lease, "lease", 15*time.Second, "lease duration")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", 10*time.Second, "renew deadline (shorter than --lease)")
	fs.DurationVar(&o.retry, "retry", 2*time.Second, "retry period")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "HTTP address for /metrics, /healthz, /readyz, /leader (empty: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "example: unexpected argument", fs.Arg(0))
		return 2
	}
	loader := config.Loader{LookupEnv: lookupEnv}
	var opt fx.Option
	var err error
	if o.configFile != "" {
		opt, err = loader.LoadFile(o.configFile)
	} else {
		var doc []byte
		if doc, err = o.document(lookupEnv); err == nil {
			opt, err = loader.Load(doc)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "example:", oneLine(err.Error()))
		return 2
	}
	if err := runApp(ctx, opt, o.httpAddr, slog.New(slog.NewTextHandler(stdout, nil))); err != nil {
		fmt.Fprintln(stderr, "example:", oneLine(backendkit.RedactText(err.Error())))
		return 1
	}
	return 0
}

// document is the configuration document of the flags' one election. The
// password stays a placeholder: the config package resolves and redacts it.
func (o options) document(lookupEnv func(string) (string, bool)) ([]byte, error) {
	backend := map[string]any{"module": "fxelection.backends.etcd", "endpoints": strings.Split(o.endpoints, ",")}
	if o.username != "" {
		backend["username"] = o.username
	}
	if _, ok := lookupEnv(passwordEnv); ok {
		backend["password"] = "{env." + passwordEnv + "}"
	}
	if o.prefix != "" {
		backend["prefix"] = o.prefix
	}
	election := map[string]any{
		"name": o.election, "backend": backend,
		"lease_duration": o.lease.String(), "renew_deadline": o.renewDeadline.String(), "retry_period": o.retry.String(),
	}
	if o.id != "" {
		election["identity"] = o.id
	}
	if o.httpAddr != "" {
		election["metadata"] = map[string]string{"http": o.httpAddr}
	}
	return json.Marshal(map[string]any{
		"elections":  []any{election},
		"extensions": []any{map[string]any{"module": "fxelection.extensions.metrics"}},
	})
}

// runApp runs the app until ctx is done, then stops it gracefully (leases
// released, the module's client closed).
func runApp(ctx context.Context, opt fx.Option, httpAddr string, log *slog.Logger) error {
	var stopTimeout time.Duration
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return fxevent.NopLogger }),
		fx.Provide(func() *slog.Logger { return slog.New(slog.DiscardHandler) }),
		opt,
		fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, es []*fxelection.Elector, h metrics.Handlers) {
			for _, e := range es {
				e.AddObserver(logContract(log))
				stopTimeout += e.Config().StopTimeout
			}
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.Handler())
			mux.Handle("/healthz", h.Liveness)
			mux.Handle("/readyz", h.Readiness)
			mux.Handle("/leader", leaderHandler(es))
			serveHTTP(lc, httpAddr, mux)
		}, fx.ParamTags(``, fxelection.GroupTag, ``))),
	)
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout+time.Second)
	defer cancel()
	return app.Stop(stopCtx)
}

// logContract writes example-app's log lines for one elector.
func logContract(log *slog.Logger) fxelection.Observer {
	return fxelection.ObserverFunc(func(ev fxelection.Event) {
		base := []any{"election", ev.Election, "identity", ev.Identity}
		switch ev.Kind {
		case fxelection.EventStartedLeading:
			log.Info("leadership acquired", append(base, "term", ev.Lease.Term)...)
		case fxelection.EventStoppedLeading:
			log.Info("leadership lost", append(base, "term", ev.Lease.Term, "reason", string(ev.Reason))...)
		case fxelection.EventNewLeader:
			log.Info("leader observed", append(base, "leader", ev.Lease.Holder, "term", ev.Lease.Term)...)
		case fxelection.EventOperation:
			if !ev.StoreFailure() || errors.Is(ev.Err, context.Canceled) {
				return
			}
			log.Warn("election error", append(base, "op", ev.Op, "error", ev.Err.Error())...)
		}
	})
}

// leaderJSON is one elector's /leader object.
type leaderJSON struct {
	Election string `json:"election"`
	Identity string `json:"identity"`
	Backend  string `json:"backend"`
	Leading  bool   `json:"leading"`
	Leader   string `json:"leader,omitempty"`
	Term     uint64 `json:"term,omitempty"`
}

// leaderHandler answers /leader with a JSON array, one object per elector.
func leaderHandler(es []*fxelection.Elector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		out := make([]leaderJSON, 0, len(es))
		for _, e := range es {
			st := e.Status()
			j := leaderJSON{Election: st.Election, Identity: st.Identity, Backend: st.Backend, Leading: st.Leading}
			if st.LeaderKnown {
				j.Leader, j.Term = st.Leader.Holder, st.Leader.Term
			}
			out = append(out, j)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

// serveHTTP serves h on addr between start and stop; an unusable address
// fails the start.
func serveHTTP(lc fx.Lifecycle, addr string, h http.Handler) {
	if addr == "" {
		return
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--http: %w", err)
			}
			go func() {
				defer close(done)
				_ = srv.Serve(ln)
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-done
			return err
		},
	})
}

// oneLine keeps an error on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
