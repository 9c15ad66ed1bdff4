package modkit

import (
	"github.com/fxelection/fxelection/fxelection/internal/settings"

	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// BackendsNamespace is the namespace of backend modules: a module whose ID is
// "fxelection.backends.<name>" must implement BackendModule, and only such
// modules may appear where a configuration document expects a backend.
const BackendsNamespace = "fxelection.backends"

// ExtensionsNamespace is the namespace of extension modules: a module whose
// ID is "fxelection.extensions.<name>" must implement ExtensionModule. A
// document lists them under "extensions"; they add fx options to the app
// (metrics, health handlers, anything that finds the electors through
// fxelection.GroupTag).
const ExtensionsNamespace = "fxelection.extensions"

// maxIDLen bounds a module ID, in bytes.
const maxIDLen = 128

// ModuleID names a module: two or more dot-separated labels, each a
// lower-case ASCII letter followed by lower-case letters, digits or
// underscores ("fxelection.backends.redis"). Everything before the last
// label is the namespace, which says what kind of module it is and where a
// document may use it; the last label is its name within that namespace.
type ModuleID string

// Namespace returns everything before the last dot ("fxelection.backends"),
// or "" if id has no dot.
func (id ModuleID) Namespace() string {
	i := strings.LastIndexByte(string(id), '.')
	if i < 0 {
		return ""
	}
	return string(id[:i])
}

// Name returns the last label ("redis").
func (id ModuleID) Name() string {
	return string(id[strings.LastIndexByte(string(id), '.')+1:])
}

// Validate reports whether id has the documented syntax. The error quotes
// id (IDs are not secret).
func (id ModuleID) Validate() error {
	if id == "" {
		return fmt.Errorf("%w: empty module ID", ErrInvalidModuleID)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%w: module ID (%d bytes) longer than %d bytes", ErrInvalidModuleID, len(id), maxIDLen)
	}
	labels := strings.Split(string(id), ".")
	if len(labels) < 2 {
		return fmt.Errorf("%w: module ID %q needs a namespace (\"namespace.name\")", ErrInvalidModuleID, id)
	}
	for _, l := range labels {
		if !validLabel(l) {
			return fmt.Errorf("%w: module ID %q: label %q must be a lower-case letter followed by lower-case letters, digits or underscores", ErrInvalidModuleID, id, l)
		}
	}
	return nil
}

func validLabel(l string) bool {
	if l == "" || l[0] < 'a' || l[0] > 'z' {
		return false
	}
	for i := 1; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ModuleInfo describes a registered module.
type ModuleInfo struct {
	// ID names the module, namespace included ("fxelection.backends.redis").
	ID ModuleID

	// Doc is a one-line description for module listings
	// ("Redis or Valkey leases (server-side expiry, push wake-up)").
	Doc string

	// New returns a pointer to a new, empty value of the module's config
	// struct, into which a document's settings are decoded. It must have no
	// side effects: no I/O, no goroutines, no global state. It is called at
	// registration (to check the module) and once per use in a document.
	New func() Module
}

// Module is a module's config type: a struct whose exported fields, named by
// their `json` tags, are the module's settings, with this method returning
// its ModuleInfo. Mark required settings with the tag `config:"required"`.
// The key "module" is reserved for the module ID and cannot be a setting.
//
// A module may also implement Provisioner, Validator and CleanerUpper (or
// ContextCleanerUpper); modules in BackendsNamespace must implement
// BackendModule, and those in ExtensionsNamespace ExtensionModule.
type Module interface {
	ElectionModule() ModuleInfo
}

// Validator is implemented by a module that checks its decoded settings.
// Validate runs when a document is loaded, before anything is provisioned,
// so it must check settings only: no I/O, no side effects (Parse followed
// by Build calls it twice). A backend package's Validate should be the same
// function its plain constructor uses to check options. Its error should
// name the setting by its JSON key; it is reported under the module's path.
type Validator interface {
	Validate() error
}

// Provisioner is implemented by a module that needs set-up before use
// (dialling a client, reading a certificate). Provision runs when the fx app
// starts, after every module in the document was decoded and validated,
// with the start hook's context: use it for I/O during Provision, never keep
// it. If Provision fails, Cleanup is called before the error is returned.
type Provisioner interface {
	Provision(ctx Context) error
}

// CleanerUpper is implemented by a module that holds resources after
// Provision (clients, pools). Cleanup runs when the app stops, after every
// elector using the module has stopped, and also when the app fails to start
// after — or during — the module's Provision. It runs at most once per
// provisioning and must tolerate a partly provisioned module.
//
// Cleanup takes no context, so it cannot know fx's stop deadline: fx stops
// waiting for it at the deadline (its Stop returns the context's error)
// but the call runs on. A module whose clean-up can block (closing a pool
// that waits for its connections) should implement ContextCleanerUpper
// instead, or as well.
type CleanerUpper interface {
	Cleanup() error
}

// ContextCleanerUpper is CleanerUpper with a deadline. When a module
// implements it, CleanupContext is called instead of Cleanup (never both),
// at the same moments and at most once per provisioning. ctx is the fx
// hook's: on app stop, the OnStop context, which carries fx's stop
// deadline (fx.StopTimeout); when the module's own start fails, the OnStart
// context. CleanupContext must return by the time ctx is done: what cannot
// finish by then (a pool close waiting on an unresponsive server) may go
// on in the background, and the module's documentation should say so. It
// must tolerate a partly provisioned module.
type ContextCleanerUpper interface {
	CleanupContext(ctx context.Context) error
}

// BackendModule is a module in BackendsNamespace: after Provision (if any)
// it yields the fxelection.Backend electors use. Backend is called once per
// provisioning; a nil Backend with a nil error is an error.
type BackendModule interface {
	Module
	Backend() (fxelection.Backend, error)
}

// ExtensionModule is a module in ExtensionsNamespace: it contributes fx
// options to the app a document builds, for example a metrics module that
// injects every elector from the group fxelection.GroupTag. Options is
// called once, by Build, after Validate; it must do no I/O (the options
// it returns hook into the fx lifecycle themselves, so extensions do not
// implement Provisioner or CleanerUpper).
type ExtensionModule interface {
	Module
	Options() (fx.Option, error)
}

// registry holds the registered modules. RegisterModule writes it (from init
// functions); everything else reads it.
var registry = struct {
	sync.RWMutex
	m map[ModuleID]ModuleInfo
}{m: map[ModuleID]ModuleInfo{}}

// RegisterModule makes m's module available to documents by its ID. Call it
// only from an init function, and do nothing else there:
//
//	func init() { modkit.RegisterModule(Module{}) }
//
// It panics, as caddy.RegisterModule does, on programming errors found at
// start-up: an invalid or duplicate ID, an empty or multi-line Doc, a nil
// New, New returning something other than a non-nil pointer to a struct
// that reports the same ID, a setting named "module", or a module in
// BackendsNamespace that does not implement BackendModule.
func RegisterModule(m Module) {
	if m == nil {
		panic("config: RegisterModule(nil)")
	}
	info := m.ElectionModule()
	if err := checkModule(info); err != nil {
		panic("config: RegisterModule: " + err.Error())
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[info.ID]; dup {
		panic(fmt.Sprintf("config: RegisterModule: module %q already registered", info.ID))
	}
	registry.m[info.ID] = info
}

func checkModule(info ModuleInfo) error {
	if err := info.ID.Validate(); err != nil {
		return err
	}
	switch {
	case info.Doc == "":
		return fmt.Errorf("module %q: empty Doc", info.ID)
	case strings.ContainsAny(info.Doc, "\r\n"):
		return fmt.Errorf("module %q: Doc must be one line", info.ID)
	case info.New == nil:
		return fmt.Errorf("module %q: nil New", info.ID)
	}
	v := info.New()
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("module %q: New must return a non-nil pointer to a struct, got %T", info.ID, v)
	}
	if got := v.ElectionModule().ID; got != info.ID {
		return fmt.Errorf("module %q: New returns a module whose ID is %q", info.ID, got)
	}
	if _, ok := settings.Of(rv.Elem().Type()).ByKey[moduleKey]; ok {
		return fmt.Errorf("module %q: setting %q is reserved for the module ID", info.ID, moduleKey)
	}
	switch info.ID.Namespace() {
	case BackendsNamespace:
		if _, ok := v.(BackendModule); !ok {
			return fmt.Errorf("module %q: %T does not implement BackendModule", info.ID, v)
		}
	case ExtensionsNamespace:
		if _, ok := v.(ExtensionModule); !ok {
			return fmt.Errorf("module %q: %T does not implement ExtensionModule", info.ID, v)
		}
		_, prov := v.(Provisioner)
		_, clean := v.(CleanerUpper)
		_, cleanCtx := v.(ContextCleanerUpper)
		if prov || clean || cleanCtx {
			return fmt.Errorf("module %q: extensions hook into the fx lifecycle through their options, not Provision or Cleanup", info.ID)
		}
	}
	return nil
}

// Modules returns every registered module, sorted by ID, for listings such
// as `example-app modules`.
func Modules() []ModuleInfo {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]ModuleInfo, 0, len(registry.m))
	for _, info := range registry.m {
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ModuleInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// GetModule returns the module registered under id. An unknown ID is an
// error matching ErrUnknownModule that lists the modules registered in the
// same namespace and says to import the package that provides it.
func GetModule(id ModuleID) (ModuleInfo, error) {
	registry.RLock()
	info, ok := registry.m[id]
	registry.RUnlock()
	if ok {
		return info, nil
	}
	var same []string
	for _, m := range Modules() {
		if m.ID.Namespace() == id.Namespace() {
			same = append(same, string(m.ID))
		}
	}
	known := "none"
	if len(same) > 0 {
		known = strings.Join(same, ", ")
	}
	return ModuleInfo{}, fmt.Errorf("%w %q (registered in its namespace: %s); import the package that provides it", ErrUnknownModule, id, known)
}
