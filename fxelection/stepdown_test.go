package fxelection_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// lostLog is a slog.Handler that records when "leadership lost" is logged.
type lostLog struct {
	mu *sync.Mutex
	at *[]time.Time
}

func (h lostLog) Enabled(context.Context, slog.Level) bool { return true }
func (h lostLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lostLog) WithGroup(string) slog.Handler            { return h }
func (h lostLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "leadership lost" {
		h.mu.Lock()
		*h.at = append(*h.at, time.Now())
		h.mu.Unlock()
	}
	return nil
}

// A leader whose renewal hangs in a backend that ignores its context
// steps down at the renew deadline, measured from the start of its last
// successful renewal: the leader context is cancelled, OnStoppedLeading
// is called and "leadership lost" is logged by then — not when the hung
// call returns. On fake time the bound is exact. It was broken for the
// callback and the log line (they waited for the call) on a backend
// without batching.
func TestStepDownOnTimeWhileBackendHangs(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := "direct"
		if batched {
			name = "batched"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					fa *faultinject.Backend
					b  fxelection.Backend
				)
				if batched {
					bf := faultinject.NewBatch(memory.New())
					fa, b = bf.Backend, bf
				} else {
					fa = faultinject.New(memory.New())
					b = fa
				}
				defer fa.Wedge(backendkit.OpRenew, false)

				var mu sync.Mutex
				var cancelled, stopped, logged []time.Time
				c := cfg("a")
				c.Logger = slog.New(lostLog{&mu, &logged})
				c.Callbacks.OnStartedLeading = func(ctx context.Context) {
					<-ctx.Done()
					mu.Lock()
					cancelled = append(cancelled, time.Now())
					mu.Unlock()
				}
				c.Callbacks.OnStoppedLeading = func(fxelection.Lease, fxelection.StopReason) {
					mu.Lock()
					stopped = append(stopped, time.Now())
					mu.Unlock()
				}
				e := startIn(t, c, newGroup(t, b)) // a group: batched renewals when b batches
				// A few successful renewals first.
				time.Sleep(3 * retry)
				synctest.Wait()
				if !e.IsLeader() {
					t.Fatal("not leading")
				}
				fa.Wedge(backendkit.OpRenew, true)
				last := e.Status().LastRenew
				if last.IsZero() {
					t.Fatal("no renewal yet")
				}
				bound := last.Add(deadline)
				time.Sleep(time.Until(bound))
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				for _, s := range []struct {
					what string
					at   []time.Time
				}{{"leader context cancelled", cancelled}, {"OnStoppedLeading called", stopped}, {`"leadership lost" logged`, logged}} {
					switch {
					case len(s.at) != 1:
						t.Errorf("%s %d times by the renew deadline, want once", s.what, len(s.at))
					case s.at[0].After(bound):
						t.Errorf("%s %v after the renew deadline", s.what, s.at[0].Sub(bound))
					}
				}
				// (Batched, the loop is not stuck: it has given the renewal
				// up and may lead again already, with a new term.)
				if !batched && e.IsLeader() {
					t.Error("IsLeader after the renew deadline")
				}
			})
		})
	}
}
