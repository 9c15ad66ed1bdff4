package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

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
				log.Info("leader work", "election", e.Status().Election, "identity", e.Status().Identity, "term", l.Term)
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

// leaderHandler answers /leader over the electors current returns at each
// request: with one elector, its leaderJSON; with several, a JSON array of
// them, in the order of the document's elections. ?election=NAME picks
// that election's object (an array if several share the name; 404 if none
// has it).
func leaderHandler(current func() []*fxelection.Elector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		es := current()
		picked := es
		if name, ok := r.URL.Query()["election"]; ok {
			picked = nil
			for _, e := range es {
				if len(name) == 1 && e.Status().Election == name[0] {
					picked = append(picked, e)
				}
			}
			if len(picked) == 0 {
				http.Error(w, "no such election", http.StatusNotFound)
				return
			}
		}
		out := make([]leaderJSON, len(picked))
		for i, e := range picked {
			out[i] = leaderOf(e)
		}
		w.Header().Set("Content-Type", "application/json")
		if len(out) == 1 {
			_ = json.NewEncoder(w).Encode(out[0])
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	})
}

// leaderOf is e's /leader object. While e leads it shows e's own lease as
// last renewed (Status.Lease), so expires_at moves on with every renewal;
// otherwise the leader the store reported at e's last attempt
// (Status.Leader, which for a leader is the lease as first acquired).
func leaderOf(e *fxelection.Elector) leaderJSON {
	st := e.Status()
	out := leaderJSON{Election: st.Election, Identity: st.Identity, Backend: st.Backend, Leading: st.Leading}
	l, known := st.Leader, st.LeaderKnown
	if st.Leading {
		l, known = st.Lease, true
	}
	if known {
		out.Leader, out.Term, out.Metadata = l.Holder, l.Term, l.Metadata
		if !l.ExpiresAt.IsZero() {
			out.ExpiresAt = &l.ExpiresAt
		}
	}
	return out
}

// serveHTTP serves h on addr (given by the flag named flag) with timeouts t
// between start and stop; an unusable address fails the app's start.
func serveHTTP(lc fx.Lifecycle, flag, addr string, h http.Handler, t httpTimeouts) {
	if addr == "" {
		return
	}
	serve(lc, flag+" "+addr, func() (net.Listener, error) { return net.Listen("tcp", addr) }, h, t)
}

// serve serves h on the listener listen opens between start and stop; what
// names the listener in errors ("--http ADDR").
func serve(lc fx.Lifecycle, what string, listen func() (net.Listener, error), h http.Handler, t httpTimeouts) {
	srv := newHTTPServer(h, t)
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := listen()
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
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
