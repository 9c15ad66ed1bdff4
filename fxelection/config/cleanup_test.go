package config_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
)

func init() { config.RegisterModule(Deadline{}) }

// Deadline is a test backend module with both clean-ups: it journals which
// one ran and the deadline of CleanupContext's context.
type Deadline struct {
	Journal string `json:"journal" config:"required"`
	Tag     string `json:"tag" config:"required"`
}

var (
	_ config.CleanerUpper        = (*Deadline)(nil)
	_ config.ContextCleanerUpper = (*Deadline)(nil)
)

func (Deadline) ElectionModule() config.ModuleInfo {
	return config.ModuleInfo{ID: "fxelection.backends.deadline", Doc: "test module with a context clean-up", New: func() config.Module { return new(Deadline) }}
}

func (d *Deadline) Backend() (fxelection.Backend, error) { return fxelection.NewMemoryBackend(), nil }

func (d *Deadline) Cleanup() error {
	journalFor(d.Journal).add("%s:cleanup", d.Tag)
	return nil
}

// cleanupDeadlines receives the deadline of every CleanupContext call.
var cleanupDeadlines = make(chan time.Time, 16)

func (d *Deadline) CleanupContext(ctx context.Context) error {
	dl, ok := ctx.Deadline()
	journalFor(d.Journal).add("%s:cleanup-context deadline=%t", d.Tag, ok)
	if ok {
		cleanupDeadlines <- dl
	}
	return nil
}

// TestCleanupContextGetsStopDeadline: a module implementing
// ContextCleanerUpper gets CleanupContext (not Cleanup) with fx's OnStop
// context, whose deadline is the one given to app.Stop; a nested module
// gets it too.
func TestCleanupContextGetsStopDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := journalFor(t.Name())
	deadline := func(tag string) string {
		return `{"module": "fxelection.backends.deadline", "journal": "` + t.Name() + `", "tag": "` + tag + `"}`
	}
	opt, err := config.Load([]byte(`{"elections": [
		{"name": "a", "backend": ` + deadline("top") + `, ` + timing + `},
		{"name": "b", "backend": {"module": "fxelection.backends.wrap", "journal": "` + t.Name() + `", "inner": ` + deadline("nested") + `}, ` + timing + `}
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
	got := j.events()
	for _, ev := range []string{"top:cleanup-context deadline=true", "nested:cleanup-context deadline=true"} {
		if !slices.Contains(got, ev) {
			t.Errorf("life cycle %v lacks %q", got, ev)
		}
	}
	for _, ev := range got {
		if ev == "top:cleanup" || ev == "nested:cleanup" {
			t.Errorf("Cleanup called beside CleanupContext: %v", got)
		}
	}
	for range 2 {
		select {
		case dl := <-cleanupDeadlines:
			if !dl.Equal(want) {
				t.Errorf("CleanupContext deadline %v, want app.Stop's %v", dl, want)
			}
		default:
			t.Fatal("CleanupContext saw no deadline")
		}
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
	config.RegisterModule(cleaningExtension{})
}

type cleaningExtension struct{}

func (cleaningExtension) ElectionModule() config.ModuleInfo {
	return config.ModuleInfo{ID: "fxelection.extensions.cleaning", Doc: "bad extension", New: func() config.Module { return new(cleaningExtension) }}
}
func (cleaningExtension) Options() (fx.Option, error)          { return fx.Options(), nil }
func (cleaningExtension) CleanupContext(context.Context) error { return nil }
