// Package exampleapp is the command behind the examples that live in a
// backend's own Go module (modules/etcd/example,
// modules/kubernetes/example): the path example-app --backend X takes, for
// backends example-app cannot import without their dependencies. Its flags
// become a configuration document (one election on the backend's module
// plus the fxelection.extensions.metrics extension), or --config FILE runs
// a document of your own; the app serves /metrics, /healthz, /readyz and
// /leader and logs "leadership acquired", "leadership lost", "leader
// observed" and "election error" as example-app does.
package exampleapp

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
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/metrics"
)

// Backend is what one backend's example adds to the common flags.
type Backend struct {
	// Module is the backend's configuration module, such as
	// "fxelection.backends.etcd".
	Module string
	// Flags registers the backend's own flags on fs, and returns the
	// function that turns their values into the module's settings
	// (besides "module"). Secrets should come from the environment as
	// placeholders ("{env.NAME}"), so that they show neither in the process
	// list nor in the document; lookupEnv tells which are set.
	Flags func(fs *flag.FlagSet) (settings func(lookupEnv func(string) (string, bool)) map[string]any)
}

// options are the common flags' values.
type options struct {
	configFile, election, id, httpAddr string
	lease, renewDeadline, retry        time.Duration
}

// Run is an example command's main without the process: it parses args
// (name is the command's name in messages), runs until ctx is done and
// returns the exit code (2 for bad usage, 1 when the app failed).
func Run(ctx context.Context, name string, b Backend, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.configFile, "config", "", "configuration document to run (JSON; YAML if .yaml/.yml) instead of the flags' one election")
	settings := b.Flags(fs)
	fs.StringVar(&o.election, "election", "example", "election name")
	fs.StringVar(&o.id, "id", "", "candidate identity (default: host-pid-random)")
	timing := fxelection.Timing{}.WithDefaults()
	fs.DurationVar(&o.lease, "lease", timing.LeaseDuration, "lease duration")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", timing.RenewDeadline, "renew deadline (shorter than --lease)")
	fs.DurationVar(&o.retry, "retry", timing.RetryPeriod, "retry period")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "HTTP address for /metrics, /healthz, /readyz, /leader (empty: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, name+": unexpected argument", fs.Arg(0))
		return 2
	}
	loader := config.Loader{LookupEnv: lookupEnv}
	var opt fx.Option
	var err error
	if o.configFile != "" {
		opt, err = loader.LoadFile(o.configFile)
	} else {
		var doc []byte
		if doc, err = o.document(b.Module, settings(lookupEnv)); err == nil {
			opt, err = loader.Load(doc)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, name+":", oneLine(err.Error()))
		return 2
	}
	if err := runApp(ctx, opt, o.httpAddr, slog.New(slog.NewTextHandler(stdout, nil))); err != nil {
		fmt.Fprintln(stderr, name+":", oneLine(backendkit.RedactText(err.Error())))
		return 1
	}
	return 0
}

// document is the configuration document of the flags' one election on
// module with settings.
func (o options) document(module string, settings map[string]any) ([]byte, error) {
	backend := map[string]any{"module": module}
	for k, v := range settings {
		backend[k] = v
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

// LeaderJSON is one elector's object in /leader's JSON array.
type LeaderJSON struct {
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
		out := make([]LeaderJSON, 0, len(es))
		for _, e := range es {
			st := e.Status()
			j := LeaderJSON{Election: st.Election, Identity: st.Identity, Backend: st.Backend, Leading: st.Leading}
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
