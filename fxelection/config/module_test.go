package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func TestModuleID(t *testing.T) {
	for _, tc := range []struct {
		id       modkit.ModuleID
		ok       bool
		ns, name string
	}{
		{"fxelection.backends.redis", true, "fxelection.backends", "redis"},
		{"acme.backends.etcd_v3", true, "acme.backends", "etcd_v3"},
		{"a.b", true, "a", "b"},
		{"", false, "", ""},
		{"redis", false, "", "redis"},
		{"fxelection.backends.Redis", false, "", ""},
		{"fxelection..redis", false, "", ""},
		{"fxelection.backends.", false, "", ""},
		{".backends.redis", false, "", ""},
		{"fxelection.backends.3d", false, "", ""},
		{"fxelection.backends.re-dis", false, "", ""},
		{"fxelection.backends.re dis", false, "", ""},
		{"fxelection.backends.é", false, "", ""},
		{modkit.ModuleID("a." + strings.Repeat("b", 127)), false, "", ""},
	} {
		err := tc.id.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%q.Validate() = %v, want ok=%v", tc.id, err, tc.ok)
		}
		if err != nil && !errors.Is(err, config.ErrInvalidModuleID) {
			t.Errorf("%q: error %v does not match ErrInvalidModuleID", tc.id, err)
		}
		if tc.ok && (tc.id.Namespace() != tc.ns || tc.id.Name() != tc.name) {
			t.Errorf("%q: namespace %q name %q", tc.id, tc.id.Namespace(), tc.id.Name())
		}
	}
}

func TestModulesAndGetModule(t *testing.T) {
	mods := modkit.Modules()
	var ids []string
	for _, m := range mods {
		ids = append(ids, string(m.ID))
		if m.Doc == "" || m.New == nil {
			t.Errorf("%s: empty Doc or New", m.ID)
		}
	}
	if strings.Join(ids, " ") != "fxelection.backends.memory fxelection.backends.probe fxelection.backends.wrap fxelection.extensions.census" {
		t.Fatalf("Modules() = %v", ids)
	}
	info, err := modkit.GetModule("fxelection.backends.memory")
	if err != nil || info.ID != "fxelection.backends.memory" {
		t.Fatalf("GetModule = %+v, %v", info, err)
	}
	// New gives a fresh value each time (Memory is zero-sized, so use Probe).
	probeInfo, _ := modkit.GetModule("fxelection.backends.probe")
	if a, b := probeInfo.New(), probeInfo.New(); a == b {
		t.Fatal("New returned the same value twice")
	}
	_, err = modkit.GetModule("fxelection.backends.redis")
	if !errors.Is(err, config.ErrUnknownModule) || !strings.Contains(err.Error(), "fxelection.backends.memory, fxelection.backends.probe, fxelection.backends.wrap") {
		t.Fatalf("GetModule(unknown) = %v", err)
	}
}

// Bad modules for registration.
type (
	modFunc     func() modkit.ModuleInfo
	notBackend  struct{}
	valueNew    struct{}
	idMismatch  struct{}
	reservedKey struct {
		Module string `json:"module"`
	}
	extNoOptions struct{}
	extProvision struct{ Census }
)

func (extNoOptions) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.extensions.no", Doc: "x", New: func() modkit.Module { return new(extNoOptions) }}
}
func (extProvision) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.extensions.prov", Doc: "x", New: func() modkit.Module { return new(extProvision) }}
}
func (*extProvision) Provision(modkit.Context) error { return nil }

func (f modFunc) ElectionModule() modkit.ModuleInfo { return f() }
func (notBackend) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.backends.nb", Doc: "x", New: func() modkit.Module { return new(notBackend) }}
}
func (valueNew) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "acme.things.v", Doc: "x", New: func() modkit.Module { return valueNew{} }}
}
func (idMismatch) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "acme.things.a", Doc: "x", New: func() modkit.Module { return new(config.Memory) }}
}
func (reservedKey) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "acme.things.r", Doc: "x", New: func() modkit.Module { return new(reservedKey) }}
}

func TestRegisterModulePanics(t *testing.T) {
	info := func(id modkit.ModuleID, doc string, newFn func() modkit.Module) modkit.Module {
		return modFunc(func() modkit.ModuleInfo { return modkit.ModuleInfo{ID: id, Doc: doc, New: newFn} })
	}
	for _, tc := range []struct {
		name string
		m    modkit.Module
		want string
	}{
		{"nil", nil, "RegisterModule(nil)"},
		{"bad ID", info("Redis", "x", nil), "needs a namespace"},
		{"empty doc", info("acme.x.y", "", nil), "empty Doc"},
		{"multi-line doc", info("acme.x.y", "a\nb", nil), "one line"},
		{"nil New", info("acme.x.y", "x", nil), "nil New"},
		{"New returns nil", info("acme.x.y", "x", func() modkit.Module { return nil }), "non-nil pointer to a struct"},
		{"New returns a value", valueNew{}, "non-nil pointer to a struct"},
		{"ID mismatch", idMismatch{}, `New returns a module whose ID is "fxelection.backends.memory"`},
		{"reserved key", reservedKey{}, `setting "module" is reserved`},
		{"backend without Backend", notBackend{}, "does not implement BackendModule"},
		{"extension without Options", extNoOptions{}, "does not implement ExtensionModule"},
		{"extension with Provision", extProvision{}, "not Provision or Cleanup"},
		{"duplicate", config.Memory{}, `module "fxelection.backends.memory" already registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %v, want %q", p, tc.want)
				}
			}()
			modkit.RegisterModule(tc.m)
		})
	}
}

func TestMemoryModule(t *testing.T) {
	m := new(config.Memory)
	a, err := m.Backend()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.Backend()
	if a == b || a.(backendkit.NamedBackend).BackendName() != "memory" {
		t.Fatal("Backend must return a new memory backend")
	}
}
