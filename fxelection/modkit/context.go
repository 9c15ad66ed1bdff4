package modkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/fxelection/fxelection/fxelection"
)

// moduleKey is the reserved key naming a module in a module object.
const moduleKey = "module"

// Context is what Provision receives: the fx start hook's context (it is a
// context.Context, so pass it to client calls directly), the app's logger,
// and ProvisionBackend for modules that load other modules. It is valid
// only during Provision.
//
// A test of a module's Provision may pass Context{Context: ctx}: its
// Logger discards, and ProvisionBackend fails.
type Context struct {
	context.Context
	logger    *slog.Logger
	provision func(BackendModule) (fxelection.Backend, error)
}

// NewContext returns the Context the document runtime (package config)
// gives Provision: ctx, the app's logger, and provision, which
// ProvisionBackend calls for a nested module (provisioning it and
// registering its clean-up after the calling module's).
func NewContext(ctx context.Context, logger *slog.Logger, provision func(BackendModule) (fxelection.Backend, error)) Context {
	return Context{Context: ctx, logger: logger, provision: provision}
}

// ProvisionBackend provisions a backend module nested in the calling
// module's settings (a BackendRef field, decoded and validated with the
// document) and returns its Backend: Provision (if implemented), then
// Backend. Its Cleanup (or CleanupContext, with the hook's context) is
// registered to run after the calling module's own clean-up — on app stop,
// or at once if the calling module's start fails — so the caller must not
// clean it up itself. ref must be an inline module
// object; a module may provision each of its nested modules once.
func (c Context) ProvisionBackend(ref BackendRef) (fxelection.Backend, error) {
	if ref.Module == nil {
		return nil, errors.New("config: ProvisionBackend: not an inline module object")
	}
	if c.provision == nil {
		return nil, errors.New("config: ProvisionBackend: called outside Provision")
	}
	return c.provision(ref.Module)
}

// Logger returns the app's *slog.Logger (from the fx graph), or a logger that
// discards everything; never nil.
func (c Context) Logger() *slog.Logger {
	if c.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.logger
}

// BackendRef is where a document names a backend: either a module object
// {"module": "fxelection.backends.redis", …settings} (Module) or, in an
// election, a string naming an entry of Document.Backends (Use). Exactly one
// is set.
type BackendRef struct {
	// Use names an entry of Document.Backends.
	Use string
	// Module is an inline backend module with its decoded settings.
	Module BackendModule
}

// IsZero reports whether neither Use nor Module is set.
func (r BackendRef) IsZero() bool { return r.Use == "" && r.Module == nil }

// MarshalJSON writes Use as a string, or Module's settings with its ID
// under "module". Secrets come out as "xxxxx".
func (r BackendRef) MarshalJSON() ([]byte, error) {
	if r.Module == nil {
		return json.Marshal(r.Use)
	}
	return MarshalModule(r.Module)
}

// MarshalModule writes mod's settings as a document holds them: a JSON
// object of its settings (Secrets as "xxxxx") with its ID under "module".
func MarshalModule(mod Module) ([]byte, error) {
	raw, err := json.Marshal(mod)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("modkit: module %q does not marshal to a JSON object", mod.ElectionModule().ID)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[moduleKey], _ = json.Marshal(mod.ElectionModule().ID)
	return json.Marshal(m)
}
