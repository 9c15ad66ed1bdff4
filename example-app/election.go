package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/fxelection/fxelection/fxelection"
)

// logCallbacks logs the election with the example's log contract.
func logCallbacks(log *slog.Logger, c fxelection.Config) fxelection.Callbacks {
	base := func(msg string, args ...any) {
		log.Info(msg, append([]any{"election", c.Name, "identity", c.Identity}, args...)...)
	}
	return fxelection.Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			l, _ := fxelection.LeaseFromContext(ctx)
			base("leadership acquired", "term", l.Term)
		},
		OnStoppedLeading: func(l fxelection.Lease, why fxelection.StopReason) {
			base("leadership lost", "term", l.Term, "reason", string(why))
		},
		OnNewLeader: func(l fxelection.Lease) {
			base("leader observed", "leader", l.Holder, "term", l.Term)
		},
		OnError: func(err error) {
			op := ""
			var oe *fxelection.OpError
			if errors.As(err, &oe) {
				op, err = oe.Op, oe.Err
			}
			log.Warn("election error", "election", c.Name, "identity", c.Identity, "op", op, "error", err.Error())
		},
	}
}

// work does the leader's job once per interval, only while leading. The log
// line is written inside RunIfLeader after checking the leader context, so
// it never appears once leadership has ended.
func work(ctx context.Context, e *fxelection.Elector, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _ = e.RunIfLeader(ctx, func(ctx context.Context) error {
			l, _ := fxelection.LeaseFromContext(ctx)
			if ctx.Err() == nil {
				log.Info("leader work", "election", e.Name(), "identity", e.Identity(), "term", l.Term)
			}
			return nil
		})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runElection runs one candidate until ctx is done (SIGINT/SIGTERM), then
// stops gracefully: leader work drained, lease released.
func runElection(ctx context.Context, o options, log *slog.Logger) error {
	cfg := o.config()
	cfg.Callbacks = logCallbacks(log, cfg)
	// The callbacks write the log contract; the core's own log lines would
	// repeat them.
	cfg.Logger = slog.New(slog.DiscardHandler)
	// Built outside the graph so a bad setting is reported as bad input.
	// Backend constructors do no I/O; the store is first contacted when
	// campaigning starts.
	b, err := newBackend(ctx, o)
	if err != nil {
		return err
	}
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return fxevent.NopLogger }),
		fx.StartTimeout(o.lease+o.stopTimeout),
		fx.StopTimeout(o.stopTimeout+time.Second),
		fx.Supply(cfg, o),
		fx.Provide(
			func(lc fx.Lifecycle) fxelection.Backend {
				if c, ok := b.(io.Closer); ok {
					lc.Append(fx.StopHook(c.Close))
				}
				return b
			},
			func() *slog.Logger { return log },
		),
		fxelection.Module,
		observability(),
		fx.Invoke(startWorker),
	)
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, o.lease+o.stopTimeout)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), o.stopTimeout+time.Second)
	defer cancel()
	return app.Stop(stopCtx)
}

// newBackend builds the backend the flags choose. A setting the backend
// rejects is bad input: the error names the flag that feeds it and withholds
// secrets.
func newBackend(ctx context.Context, o options) (fxelection.Backend, error) {
	b, err := fxelection.NewBackend(ctx, o.backend, o.settings())
	if err != nil {
		return nil, usageError{o.settingProblem(err)}
	}
	return b, nil
}

// startWorker runs work for the app's elector between start and stop.
func startWorker(lc fx.Lifecycle, e *fxelection.Elector, o options, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			wg.Go(func() { work(ctx, e, o.workInterval, log) })
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			wg.Wait()
			return nil
		},
	})
}

// leaderJSON is the /leader response.
type leaderJSON struct {
	Election  string            `json:"election"`
	Identity  string            `json:"identity"`
	Backend   string            `json:"backend"`
	Leading   bool              `json:"leading"`
	Leader    string            `json:"leader,omitempty"`
	Term      uint64            `json:"term,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
}

func leaderHandler(e *fxelection.Elector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := e.Status()
		out := leaderJSON{Election: st.Election, Identity: st.Identity, Backend: st.Backend, Leading: st.Leading}
		if st.LeaderKnown {
			out.Leader, out.Term, out.Metadata = st.Leader.Holder, st.Leader.Term, st.Leader.Metadata
			if !st.Leader.ExpiresAt.IsZero() {
				out.ExpiresAt = &st.Leader.ExpiresAt
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

// serveHTTP serves mux on addr between start and stop; an unusable address
// fails the app's start.
func serveHTTP(lc fx.Lifecycle, addr string, h http.Handler) {
	if addr == "" {
		return
	}
	srv := newHTTPServer(h, serverTimeouts)
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", addr, err)
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
