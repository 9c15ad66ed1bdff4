package fxelection_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestExitOnLoss: with Config.ExitOnLoss, an fx app shuts down with exit
// code 1 when its elector stops leading (Resign, the lease taken away),
// through Module and Named alike; the app's own stop asks for no shutdown,
// and without ExitOnLoss a loss does not either. Real time: fx's Wait
// needs real signals, which a synctest bubble cannot have.
func TestExitOnLoss(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		named bool
		exit  bool
		end   func(*fxelection.Elector, *memory.Backend) error // nil: the app stops
	}{
		{"resign", false, true, func(e *fxelection.Elector, _ *memory.Backend) error { return e.Resign(ctx) }},
		{"lease taken away", false, true, func(e *fxelection.Elector, m *memory.Backend) error { return m.Release(ctx, e.Status().Lease) }},
		{"named, resign", true, true, func(e *fxelection.Elector, _ *memory.Backend) error { return e.Resign(ctx) }},
		{"app stop", false, true, nil},
		{"named, app stop", true, true, nil},
		{"off", false, false, func(e *fxelection.Elector, _ *memory.Backend) error { return e.Resign(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			func() {
				c := cfg("a")
				c.ExitOnLoss = tc.exit
				var (
					e     *fxelection.Elector
					store *memory.Backend
					opts  []fx.Option
				)
				if tc.named {
					opts = append(opts, fxelection.Named("jobs", c),
						fx.Populate(fx.Annotate(&e, fx.ParamTags(`name:"jobs"`))))
				} else {
					opts = append(opts, fx.Supply(c), fxelection.Module, fx.Populate(&e))
				}
				app := fxtest.New(t, append(opts, fx.NopLogger, memory.Module, fx.Populate(&store))...)
				app.RequireStart()
				done := app.Wait()
				waitFor(t, "leadership", e.IsLeader)
				if tc.end == nil {
					app.RequireStop() // a shutdown would be asked for within Stop
					select {
					case sig := <-done:
						t.Fatalf("the app's stop asked for a shutdown: %v", sig)
					default:
					}
					return
				}
				if err := tc.end(e, store); err != nil {
					t.Fatal(err)
				}
				wait := 30 * time.Second // generous: the loss shows at the next renewal
				if !tc.exit {
					wait = 2 * lease // only a wrong shutdown could come
				}
				select {
				case sig := <-done:
					if !tc.exit || sig.ExitCode != 1 {
						t.Errorf("shutdown %+v, want exit code 1 (ExitOnLoss %v)", sig, tc.exit)
					}
				case <-time.After(wait):
					if tc.exit {
						t.Errorf("no shutdown %v after the loss", wait)
					}
				}
				app.RequireStop()
			}()
		})
	}
}
