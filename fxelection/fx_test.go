package fxelection_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func TestModule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *fxelection.Elector
		var store *memory.Backend
		app := fxtest.New(t,
			fx.NopLogger,
			memory.Module,
			fx.Supply(cfg("a")),
			fxelection.Module,
			fx.Populate(&e, &store),
		)
		app.RequireStart()
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("not leader after start")
		}
		app.RequireStop()
		if _, err := store.Get(context.Background(), "jobs"); err == nil {
			t.Fatal("lease not released on stop")
		}
	})
}

func TestModuleBuildsElectorWithoutConsumers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *memory.Backend
		app := fxtest.New(t, fx.NopLogger, memory.Module, fx.Supply(cfg("a")), fxelection.Module, fx.Populate(&store))
		app.RequireStart()
		synctest.Wait()
		if l, err := store.Get(context.Background(), "jobs"); err != nil || l.Holder != "a" {
			t.Fatalf("nobody campaigned: %+v %v", l, err)
		}
		app.RequireStop()
	})
}

func TestModuleInvalidConfigFailsStart(t *testing.T) {
	bad := cfg("a")
	bad.RenewDeadline = 20 * time.Second
	app := fx.New(fx.NopLogger, memory.Module, fx.Supply(bad), fxelection.Module)
	err := app.Err()
	if err == nil || !strings.Contains(err.Error(), "fxelection: RenewDeadline: must be shorter than LeaseDuration (is 20s, LeaseDuration 3s)") {
		t.Fatalf("app error = %v", err)
	}
}

func TestNamedElections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type electors struct {
			fx.In
			Billing *fxelection.Elector   `name:"billing"`
			Reports *fxelection.Elector   `name:"reports"`
			All     []*fxelection.Elector `group:"fxelection.electors"`
		}
		var got electors
		app := fxtest.New(t, fx.NopLogger,
			memory.Module,
			fxelection.Named("billing", fxelection.Config{Identity: "a", Timing: fxelection.Timing{LeaseDuration: lease, RenewDeadline: deadline, RetryPeriod: retry}}),
			fxelection.Named("reports", fxelection.Config{Identity: "a", Timing: fxelection.Timing{LeaseDuration: lease, RenewDeadline: deadline, RetryPeriod: retry}}),
			fx.Populate(&got),
		)
		app.RequireStart()
		synctest.Wait()
		if got.Billing.Status().Election != "billing" || got.Reports.Status().Election != "reports" || len(got.All) != 2 {
			t.Fatalf("electors: %s %s %d", got.Billing.Status().Election, got.Reports.Status().Election, len(got.All))
		}
		if !got.Billing.IsLeader() || !got.Reports.IsLeader() {
			t.Fatal("independent elections should both be won")
		}
		app.RequireStop()
	})
}
