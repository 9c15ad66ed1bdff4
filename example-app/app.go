package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
)

// runFlags runs the one election the flags describe: they become a
// configuration document (options.document), which takes the same path as
// a --config file. A setting the document rejects is bad input naming the
// flag behind it.
func runFlags(ctx context.Context, o options, log *slog.Logger) error {
	doc, opt, err := o.flagsOptions()
	if err != nil {
		return err
	}
	return runApp(ctx, fx.Options(opt, inDocumentOrder(doc)), o, log, o.provisionProblem, leaderWork(o, log))
}

// flagsOptions are the flags' document and its fx options.
func (o options) flagsOptions() (*config.Document, fx.Option, error) {
	doc, err := o.document()
	if err != nil {
		return nil, nil, err
	}
	opt, err := config.Build(doc)
	if err != nil {
		return nil, nil, usageError{o.documentProblem(err)}
	}
	return doc, opt, nil
}

// runConfig runs every election the --config file describes. A document
// the config package rejects is bad input: one line per problem, each
// naming the file and the JSON path.
func runConfig(ctx context.Context, o options, log *slog.Logger) error {
	doc, opt, err := loadConfig(o)
	if err != nil {
		return err
	}
	return runApp(ctx, fx.Options(opt, inDocumentOrder(doc)), o, log, func(err error) error { return err }, leaderWork(o, log))
}

// electorList is every elector of the app, in the order of the document's
// elections.
type electorList []*fxelection.Elector

// inDocumentOrder provides the electors of doc's elections as an
// electorList, in the document's order. The value group
// (fxelection.GroupTag) holds the same electors in no fixed order (fx
// shuffles groups), so the list is assembled from each election's fx name
// tag instead: a constructor with one named parameter per election.
func inDocumentOrder(doc *config.Document) fx.Option {
	elector := reflect.TypeFor[*fxelection.Elector]()
	params := make([]reflect.Type, len(doc.Elections))
	tags := make([]string, len(doc.Elections))
	for i, e := range doc.Elections {
		name := e.FxName // the document's rule: default Name; both fit a tag (config validates)
		if name == "" {
			name = e.Name
		}
		params[i], tags[i] = elector, `name:"`+name+`"`
	}
	fn := reflect.MakeFunc(reflect.FuncOf(params, []reflect.Type{reflect.TypeFor[electorList]()}, false),
		func(args []reflect.Value) []reflect.Value {
			list := make(electorList, len(args))
			for i, a := range args {
				list[i] = a.Interface().(*fxelection.Elector)
			}
			return []reflect.Value{reflect.ValueOf(list)}
		})
	return fx.Provide(fx.Annotate(fn.Interface(), fx.ParamTags(tags...)))
}

// maxProblemLines bounds how many problems a bad --config file reports.
const maxProblemLines = 20

// configProblem turns a LoadFile error into a usage error with one line per
// problem ("FILE: elections[1].backend.addr: required"). The config package
// withholds setting values and secrets from its errors.
func configProblem(file string, err error) error {
	var lines []string
	inner := errors.Unwrap(err) // LoadFile's "FILE: …" wrapping
	if inner == nil {
		inner = err
	}
	if j, ok := inner.(interface{ Unwrap() []error }); ok && errors.As(inner, new(*config.PathError)) {
		for _, e := range j.Unwrap() {
			if len(lines) == maxProblemLines {
				lines = append(lines, "… more problems not shown")
				break
			}
			lines = append(lines, oneLine(file+": "+e.Error()))
		}
	} else if errors.As(err, new(*config.PathError)) {
		lines = append(lines, oneLine(err.Error()))
	} else {
		lines = append(lines, oneLine("--config: "+backendkit.RedactText(err.Error())))
	}
	return usageError{strings.Join(lines, "\nexample-app: ")}
}

// appWork is what runApp does with the app's electors.
type appWork struct {
	// install adds work to the app's life cycle (nil: none).
	install func(lc fx.Lifecycle, es electorList)
	// check runs once the app is built, before it starts: an error ends
	// the run with nothing started (nil: none).
	check func(es electorList) error
	// run runs once the app has started, and the app stops when it
	// returns (nil: when ctx is done).
	run func(es electorList) error
}

// leaderWork is the example's leader work (a log line every
// --work-interval) for every elector.
func leaderWork(o options, log *slog.Logger) appWork {
	return appWork{install: func(lc fx.Lifecycle, es electorList) { startWorkers(lc, es, o.workInterval, log) }}
}

// runApp runs the fx app of opt (a configuration document's options and
// inDocumentOrder's electorList) with the example's log contract, w's work
// and HTTP endpoints for every elector, until ctx is done (SIGINT/SIGTERM)
// or w.run returns, then stops gracefully: leader work drained, leases
// released, backend modules cleaned up. startProblem classifies an error
// from the app's start.
func runApp(ctx context.Context, opt fx.Option, o options, log *slog.Logger, startProblem func(error) error, w appWork) error {
	var electors []*fxelection.Elector
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return fxevent.NopLogger }),
		// The log contract is written by an observer on every elector; the
		// core's own log lines would repeat it.
		fx.Provide(func() *slog.Logger { return slog.New(slog.DiscardHandler) }),
		opt,
		observability(o.httpAddr),
		fx.Invoke(func(lc fx.Lifecycle, es electorList) {
			electors = es
			for _, e := range es {
				e.AddObserver(logContract(log))
			}
			if w.install != nil {
				w.install(lc, es)
			}
		}),
	)
	if err := app.Err(); err != nil {
		return err
	}
	if w.check != nil {
		if err := w.check(electors); err != nil {
			return err
		}
	}
	startTimeout, stopTimeout := appTimeouts(electors)
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		if ctx.Err() != nil {
			// Asked to stop while starting (a signal, or the caller's
			// cancel): fx has undone what had started. Not a failure.
			return nil
		}
		return startProblem(err)
	}
	var runErr error
	if w.run != nil {
		runErr = w.run(electors)
	} else {
		<-ctx.Done()
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return errors.Join(runErr, app.Stop(stopCtx))
}

// appTimeouts bound the app's start (backend modules provisioned: the
// longest lease plus the longest stop timeout) and stop (every elector
// stops in turn, each within its stop timeout, plus a second for the rest).
func appTimeouts(es []*fxelection.Elector) (start, stop time.Duration) {
	var lease, longest time.Duration
	stop = time.Second
	for _, e := range es {
		c := e.Config()
		lease, longest = max(lease, c.LeaseDuration), max(longest, c.StopTimeout)
		stop += c.StopTimeout
	}
	return lease + longest, stop
}

// logContract is the observer that writes the example's log contract for
// one elector: "leadership acquired", "leadership lost", "leader observed"
// and "election error" (store failures and recovered panics; "held by
// someone else", "lease lost" and "no lease" are not errors).
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
		case fxelection.EventPanic:
			log.Warn("election error", append(base, "op", "", "error", ev.Err.Error())...)
		}
	})
}

// startWorkers runs work for every elector between start and stop.
func startWorkers(lc fx.Lifecycle, es []*fxelection.Elector, interval time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			for _, e := range es {
				wg.Go(func() { work(ctx, e, interval, log) })
			}
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			wg.Wait()
			return nil
		},
	})
}

// provisionProblem turns a failed Provision of the flags' backend module
// that names one of its settings ("connection_string: invalid connection
// string": backend modules check some settings, such as connection
// strings, only when they parse them in Provision) into bad input naming
// the flag that feeds the setting. Any other error is returned as it is.
func (o options) provisionProblem(err error) error {
	var pe *config.PathError
	if !errors.As(err, &pe) || pe.Path != flagsElection+".backend" {
		return err
	}
	msg, ok := strings.CutPrefix(pe.Err.Error(), string(backendModuleID(o.backend))+" provision: ")
	if !ok {
		return err
	}
	return o.settingError(msg, err)
}

// settingError is a usage error naming the flag if msg starts with a
// setting of the chosen backend ("dsn: …"), else err.
func (o options) settingError(msg string, err error) error {
	key, _, ok := strings.Cut(msg, ":")
	if !ok || o.settingFlag(key) == "" {
		return err
	}
	return usageError{o.settingProblem(errors.New(msg))}
}

// loadConfig parses --config's document and builds its fx options; a
// problem is bad input, one line per problem, each naming the file and the
// JSON path (as LoadFile's errors name the file). Running and validating a
// document both start here.
func loadConfig(o options) (*config.Document, fx.Option, error) {
	doc, err := parseConfig(o)
	if err != nil {
		return nil, nil, err
	}
	opt, err := buildConfig(o, doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, opt, nil
}

// parseConfig parses and validates --config's document (loadConfig's
// first half).
func parseConfig(o options) (*config.Document, error) {
	doc, err := config.Loader{}.ParseFile(o.configFile)
	if err != nil {
		return nil, configProblem(o.configFile, err)
	}
	return doc, nil
}

// buildConfig builds the fx options of doc, read from --config
// (loadConfig's second half).
func buildConfig(o options, doc *config.Document) (fx.Option, error) {
	opt, err := config.Build(doc)
	if err != nil {
		return nil, configProblem(o.configFile, fmt.Errorf("%s: %w", o.configFile, err))
	}
	return opt, nil
}
