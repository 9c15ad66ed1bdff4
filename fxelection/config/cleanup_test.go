package config_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// TestCleanupContextGetsStopDeadline: a module implementing
// ContextCleanerUpper (the probe) is cleaned up through CleanupContext
// with fx's OnStop context, whose deadline is the one given to app.Stop;
// so is a nested module.
func TestCleanupContextGetsStopDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	opt, err := config.Load([]byte(`{"elections": [
		{"name": "a", "backend": ` + probeIn(t.Name(), "top", "") + `, ` + timing + `},
		{"name": "b", "backend": {"module": "fxelection.backends.wrap", "journal": "` + t.Name() + `",
			"inner": ` + probeIn(t.Name(), "nested", "") + `}, ` + timing + `}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	app := fx.New(fx.NopLogger, opt)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	want, _ := ctx.Deadline()
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"top", "nested"} {
		got, ok := cleanupDeadline(t.Name(), tag)
		switch {
		case !ok:
			t.Errorf("%s: cleaned up without CleanupContext", tag)
		case !got.Equal(want):
			t.Errorf("%s: CleanupContext deadline %v, want app.Stop's %v", tag, got, want)
		}
	}
}

// TestFailedStartCleanupGetsStartContext: when Provision fails, the module
// is cleaned up with the start hook's context (its deadline is the one
// given to app.Start).
func TestFailedStartCleanupGetsStartContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	opt, err := config.Load([]byte(doc(`{"name": "a", "backend": ` + probeIn(t.Name(), "p", `"fail_provision": true`) + `, ` + timing + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	app := fx.New(fx.NopLogger, opt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	want, _ := ctx.Deadline()
	if err := app.Start(ctx); err == nil {
		t.Fatal("start succeeded")
	}
	if got, ok := cleanupDeadline(t.Name(), "p"); !ok || !got.Equal(want) {
		t.Fatalf("CleanupContext deadline %v (called: %t), want app.Start's %v", got, ok, want)
	}
}

// TestExtensionRefusesContextCleanup: an extension may not implement
// ContextCleanerUpper, as it may not implement CleanerUpper.
func TestExtensionRefusesContextCleanup(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("RegisterModule accepted an extension with CleanupContext")
		}
	}()
	modkit.RegisterModule(cleaningExtension{})
}

type cleaningExtension struct{}

func (cleaningExtension) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.extensions.cleaning", Doc: "bad extension", New: func() modkit.Module { return new(cleaningExtension) }}
}
func (cleaningExtension) Options() (fx.Option, error)          { return fx.Options(), nil }
func (cleaningExtension) CleanupContext(context.Context) error { return nil }
