package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/metrics"
)

// runFlags runs the one election the flags describe: they become a
// configuration document (options.document), which takes the same path as
// a --config file (runDocument), without the admin endpoint. A setting the
// document rejects is bad input naming the flag behind it.
func runFlags(ctx context.Context, o options, log *slog.Logger) error {
	doc, err := o.flagsDocument()
	if err != nil {
		return err
	}
	o.adminAddr = ""
	return runDocument(ctx, doc, o, log, o.provisionProblem, leaderWork(o, log))
}

// flagsDocument is the flags' one-election document, checked as
// runDocument's runtime will check it.
func (o options) flagsDocument() (*config.Document, error) {
	doc, err := o.document()
	if err != nil {
		return nil, err
	}
	if err := config.ValidateForRuntime(doc); err != nil {
		return nil, usageError{o.documentProblem(err)}
	}
	return doc, nil
}

// runConfig runs every election the --config file describes, with the
// admin endpoint on --admin. A document the config package rejects is bad
// input: one line per problem, each naming the file and the JSON path.
func runConfig(ctx context.Context, o options, log *slog.Logger) error {
	_, doc, err := loadConfig(o)
	if err != nil {
		return err
	}
	// The admin token, read once: the endpoint compares requests with it.
	if o.adminToken, err = o.adminCredential(); err != nil {
		return err
	}
	return runDocument(ctx, doc, o, log, func(err error) error { return err }, leaderWork(o, log))
}

// docWork is what runDocument does besides running the document's
// elections with the example's log contract and metrics.
type docWork struct {
	// attach runs with each elector the runtime starts, before it starts;
	// it may refuse the elector (the document then does not run, or a
	// load is refused), and its detach runs once the elector has stopped.
	// nil: nothing.
	attach func(e *fxelection.Elector) (detach func(), err error)
	// run runs once the document is running, and the program stops when it
	// returns (nil: when ctx is done).
	run func() error
}

// leaderWork is the example's leader work: a log line every
// --work-interval while leading, for every elector.
func leaderWork(o options, log *slog.Logger) docWork {
	return docWork{attach: func(e *fxelection.Elector) (func(), error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			work(ctx, e, o.workInterval, log)
		}()
		return func() {
			cancel()
			<-done
		}, nil
	}}
}

// maxProblemLines bounds how many problems a bad document reports.
const maxProblemLines = 20

// configProblem turns a LoadFile error into a usage error with one line per
// problem ("FILE: elections[1].backend.addr: required"). The config package
// withholds setting values and secrets from its errors.
func configProblem(file string, err error) error {
	inner := errors.Unwrap(err) // LoadFile's "FILE: …" wrapping
	if inner == nil {
		inner = err
	}
	lines := problemLines(file+": ", inner)
	switch {
	case lines != nil:
	case errors.As(err, new(*config.PathError)):
		lines = append(lines, oneLine(err.Error()))
	default:
		lines = append(lines, oneLine("--config: "+backendkit.RedactText(err.Error())))
	}
	return usageError{strings.Join(lines, "\nexample-app: ")}
}

// problemLines returns one line per problem of err, a config error joining
// several (*config.PathError among them), each after prefix; at most
// maxProblemLines and a last line saying more were left out. It returns
// nil for any other error.
func problemLines(prefix string, err error) []string {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || !errors.As(err, new(*config.PathError)) {
		return nil
	}
	var lines []string
	for _, e := range j.Unwrap() {
		if len(lines) == maxProblemLines {
			return append(lines, "… more problems not shown")
		}
		lines = append(lines, oneLine(prefix+e.Error()))
	}
	return lines
}

// startTimeout bounds provisioning the backend modules of a document, when
// the program starts and on each load through the admin endpoint.
const startTimeout = time.Minute

// runDocument runs doc in a config.Runtime inside an fx app that holds the
// process's parts: the example's log contract, leader work and metrics for
// every elector the runtime starts (attachElector), the HTTP endpoints over
// the runtime's current electors, and the admin endpoint on o.adminAddr
// (none when ""), through which a new document replaces the running one.
// It runs until ctx is done (SIGINT/SIGTERM), then stops gracefully: leader
// work drained, leases released, backend modules cleaned up. startProblem
// classifies an error from the first Apply.
func runDocument(ctx context.Context, doc *config.Document, o options, log *slog.Logger, startProblem func(error) error, w docWork) error {
	var rt *config.Runtime
	lost := make(chan error, 1) // an exit_on_loss election's end
	more := w.attach
	w.attach = func(e *fxelection.Elector) (func(), error) {
		exitOnLoss(e, lost)
		if more == nil {
			return nil, nil
		}
		return more(e)
	}
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return fxevent.NopLogger }),
		fx.Provide(func(m *metrics.Metrics) *config.Runtime {
			// The log contract is written by an observer on every
			// elector; the core's own log lines would repeat it.
			return config.NewRuntime(config.RuntimeOptions{
				Logger: slog.New(slog.DiscardHandler),
				Attach: attachElector(log, m, w.attach),
			})
		}),
		fx.Populate(&rt),
		observability(o.httpAddr),
		adminEndpoint(o.adminSettings(o.adminToken), log),
	)
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := rt.Apply(startCtx, doc); err != nil {
		closeErr := rt.Close(context.Background())
		if ctx.Err() != nil {
			// Asked to stop while starting (a signal, or the caller's
			// cancel): what had started is undone. Not a failure.
			return closeErr
		}
		return errors.Join(startProblem(err), closeErr)
	}
	if err := app.Start(startCtx); err != nil {
		closeErr := rt.Close(context.Background())
		if ctx.Err() != nil {
			// Asked to stop while the endpoints started: as above.
			return closeErr
		}
		return errors.Join(err, closeErr)
	}
	var runErr error
	if w.run != nil {
		runErr = w.run()
	} else {
		select {
		case <-ctx.Done():
		case runErr = <-lost:
		}
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout(rt.Electors()))
	defer cancel()
	// The endpoints first (no load starts during the stop), then the
	// elections.
	return errors.Join(runErr, app.Stop(stopCtx), rt.Close(stopCtx))
}

// exitOnLoss makes the program stop (exit 1, after stopping gracefully)
// when e, an election with exit_on_loss, stops leading for any reason but
// its own stop (a reload that removes or changes it, or the program's
// stop): Config.ExitOnLoss, which the core leaves to the fx app (Hook),
// acted on by the program that runs the documents.
func exitOnLoss(e *fxelection.Elector, lost chan<- error) {
	if !e.Config().ExitOnLoss {
		return
	}
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if ev.Kind != fxelection.EventStoppedLeading || ev.Reason == fxelection.ReasonStopped {
			return
		}
		select {
		case lost <- fmt.Errorf("election %s: leadership ended (%s) and exit_on_loss is set", show(ev.Election), ev.Reason):
		default:
		}
	}))
}

// stopTimeout bounds stopping electors: each within its stop timeout, plus
// a second for the rest (the runtime stops them at once; the sum leaves
// room on a loaded machine).
func stopTimeout(es []*fxelection.Elector) time.Duration {
	d := time.Second
	for _, e := range es {
		d += e.Config().StopTimeout
	}
	return d
}

// attachElector returns the runtime's Attach: for each elector it starts,
// the example's log contract, metrics and then more (the mode's work, if
// not nil, which may refuse the elector); the detach it returns, called
// once the elector has stopped, ends the work and removes the elector's
// series.
func attachElector(log *slog.Logger, m *metrics.Metrics, more func(*fxelection.Elector) (func(), error)) func(*fxelection.Elector) (func(), error) {
	return func(e *fxelection.Elector) (func(), error) {
		stopWork := func() {}
		if more != nil {
			stop, err := more(e)
			if err != nil {
				return nil, err
			}
			if stop != nil {
				stopWork = stop
			}
		}
		e.AddObserver(logContract(log))
		detachMetrics := m.Attach(e)
		return func() {
			stopWork()
			detachMetrics()
		}, nil
	}
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

// loadConfig reads and parses --config's document and checks that the
// runtime can run it; a problem is bad input, one line per problem, each
// naming the file and the JSON path (as LoadFile's errors name the file).
// Running, validating and reloading a document all start here; raw is the
// file as read.
func loadConfig(o options) (raw []byte, doc *config.Document, err error) {
	raw, doc, err = config.Loader{}.ReadAndParseFile(o.configFile)
	if err != nil {
		return nil, nil, configProblem(o.configFile, err)
	}
	if err := config.ValidateForRuntime(doc); err != nil {
		return nil, nil, configProblem(o.configFile, fmt.Errorf("%s: %w", o.configFile, err))
	}
	return raw, doc, nil
}
