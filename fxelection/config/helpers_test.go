package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func init() { modkit.RegisterModule(Probe{}) }

// journal records module life-cycle calls in order, across all probes.
type journal struct {
	mu  sync.Mutex
	evs []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.evs = append(j.evs, fmt.Sprintf(format, args...))
}

func (j *journal) events() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.evs)
}

// stores are named memory backends probes can share with a test.
var stores = struct {
	sync.Mutex
	m map[string]*memory.Backend
}{m: map[string]*memory.Backend{}}

func store(name string) *memory.Backend {
	stores.Lock()
	defer stores.Unlock()
	if stores.m[name] == nil {
		stores.m[name] = memory.New()
	}
	return stores.m[name]
}

// journals by probe journal name, so parallel tests do not mix.
var journals sync.Map // string → *journal

func journalFor(name string) *journal {
	j, _ := journals.LoadOrStore(name, &journal{})
	return j.(*journal)
}

// Probe is a test backend module that records its life cycle, holds a
// goroutine between Provision and Cleanup (as a client's pool would, so
// goleak catches a missing Cleanup), and fails where told to.
type Probe struct {
	Journal       string            `json:"journal" config:"required"`
	Tag           string            `json:"tag" config:"required"`
	Store         string            `json:"store,omitempty"`
	Password      modkit.Secret     `json:"password,omitempty"`
	DSN           string            `json:"dsn,omitempty"`
	Port          int               `json:"port,omitempty"`
	Ratio         float64           `json:"ratio,omitempty"`
	Count         uint8             `json:"count,omitempty"`
	Timeout       modkit.Duration   `json:"timeout,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Hosts         []string          `json:"hosts,omitempty"`
	Extra         any               `json:"extra,omitempty"`
	Echo          string            `json:"echo,omitempty"`
	FailValidate  bool              `json:"fail_validate,omitempty"`
	FailProvision bool              `json:"fail_provision,omitempty"`
	FailBackend   bool              `json:"fail_backend,omitempty"`
	FailCleanup   bool              `json:"fail_cleanup,omitempty"`

	stop chan struct{}
	done chan struct{}
}

var (
	_ modkit.BackendModule = (*Probe)(nil)
	_ modkit.Validator     = (*Probe)(nil)
	_ modkit.Provisioner   = (*Probe)(nil)
	_ modkit.CleanerUpper  = (*Probe)(nil)

	_ modkit.ContextCleanerUpper = (*Probe)(nil)
)

func (Probe) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.backends.probe", Doc: "test module", New: func() modkit.Module { return new(Probe) }}
}

func (p *Probe) j() *journal { return journalFor(p.Journal) }

func (p *Probe) Validate() error {
	p.j().add("%s:validate", p.Tag)
	if p.Echo != "" {
		// Careless modules that quote their settings in every spelling.
		dsn := p.DSN
		short := dsn[:min(len(dsn), 64)]
		j, _ := json.Marshal(dsn)
		y, _ := yaml.Marshal(dsn)
		switch p.Echo {
		case "q":
			return fmt.Errorf("dsn %q rejected", dsn)
		case "+q":
			return fmt.Errorf("dsn %+q rejected", dsn)
		case "prefix":
			return fmt.Errorf("dsn %q… rejected", short)
		case "json":
			return fmt.Errorf(`{"dsn": %s}`, j)
		case "yaml":
			return fmt.Errorf("dsn: %s", y)
		default:
			return fmt.Errorf("dsn %s, %q, %s, %s, %q rejected", dsn, dsn, j, y, short)
		}
	}
	if p.FailValidate {
		// A careless module that echoes its settings: Load must redact.
		return fmt.Errorf("password %s and dsn %s rejected", p.Password.Value(), p.DSN)
	}
	return nil
}

func (p *Probe) Provision(ctx modkit.Context) error {
	p.j().add("%s:provision", p.Tag)
	if ctx.Err() != nil || ctx.Logger() == nil {
		return errors.New("bad provision context")
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() { defer close(p.done); <-p.stop }()
	if p.FailProvision {
		return fmt.Errorf("dial: auth with password=%s for %s refused", p.Password.Value(), p.DSN)
	}
	return nil
}

func (p *Probe) Backend() (fxelection.Backend, error) {
	p.j().add("%s:backend", p.Tag)
	if p.FailBackend {
		return nil, errors.New("no backend today")
	}
	if p.Store != "" {
		return store(p.Store), nil
	}
	return memory.New(), nil
}

// CleanupContext records ctx's deadline (see cleanupDeadline), then
// cleans up as Cleanup does: the config package calls it instead of
// Cleanup.
func (p *Probe) CleanupContext(ctx context.Context) error {
	dl, _ := ctx.Deadline()
	probeDeadlines.Store(p.Journal+"/"+p.Tag, dl)
	return p.Cleanup()
}

// probeDeadlines holds the deadline of each probe's last CleanupContext,
// by journal/tag.
var probeDeadlines sync.Map

// cleanupDeadline returns the deadline of the context the probe journal/tag
// was last cleaned up with (zero: none), and whether it was cleaned up
// through CleanupContext at all.
func cleanupDeadline(journal, tag string) (time.Time, bool) {
	v, ok := probeDeadlines.Load(journal + "/" + tag)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

func (p *Probe) Cleanup() error {
	p.j().add("%s:cleanup", p.Tag)
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	if p.FailCleanup {
		return errors.New("cleanup refused")
	}
	return nil
}

func init() { modkit.RegisterModule(Census{}) }

// Census is a test extension: its options inject every elector from the
// group, as a metrics module would, and journal their names.
type Census struct {
	Journal string `json:"journal" config:"required"`
	Fail    bool   `json:"fail,omitempty"`
}

var _ modkit.ExtensionModule = (*Census)(nil)

func (Census) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.extensions.census", Doc: "test extension", New: func() modkit.Module { return new(Census) }}
}

func (c *Census) Options() (fx.Option, error) {
	if c.Fail {
		return nil, errors.New("census refused")
	}
	return fx.Invoke(func(es electors) {
		var names []string
		for _, e := range es.All {
			names = append(names, e.Status().Election)
		}
		slices.Sort(names)
		journalFor(c.Journal).add("census %s", strings.Join(names, ","))
	}), nil
}

func init() { modkit.RegisterModule(Wrap{}) }

// Wrap is a test backend module that loads another backend module by name
// (its "inner" setting) and hands out its Backend, as a cache adapter
// wrapping a client module would.
type Wrap struct {
	Journal string             `json:"journal" config:"required"`
	Inner   modkit.BackendRef  `json:"inner" config:"required"`
	Spare   *modkit.BackendRef `json:"spare,omitempty"`
	inner   fxelection.Backend
}

func (Wrap) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.backends.wrap", Doc: "test module loading another", New: func() modkit.Module { return new(Wrap) }}
}

func (w *Wrap) Provision(ctx modkit.Context) error {
	journalFor(w.Journal).add("wrap:provision")
	b, err := ctx.ProvisionBackend(w.Inner)
	if err != nil {
		return fmt.Errorf("inner: %w", err)
	}
	w.inner = b
	return nil
}

func (w *Wrap) Backend() (fxelection.Backend, error) {
	journalFor(w.Journal).add("wrap:backend")
	return w.inner, nil
}

func (w *Wrap) Cleanup() error {
	journalFor(w.Journal).add("wrap:cleanup")
	return nil
}
