package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Sentinel errors. Every error from decoding, placeholders and validation is
// a *PathError wrapping one of them (or a module's or fxelection.Config's own
// error), so callers can test with errors.Is and users read the JSON path.
var (
	// ErrSyntax means the document is not well-formed JSON.
	ErrSyntax = errors.New("syntax error")
	// ErrUnknownKey means an object has a key its type does not define
	// (usually a misspelt setting).
	ErrUnknownKey = errors.New("unknown key")
	// ErrDuplicateKey means an object has the same key twice.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrRequired means a required setting is missing, null or empty.
	ErrRequired = errors.New("required")
	// ErrWrongType means a value has the wrong JSON type (a number where a
	// string belongs) or does not fit the Go type (out of range).
	ErrWrongType = errors.New("wrong type")
	// ErrInvalidValue means a value has the right JSON type but is not
	// acceptable (a malformed duration).
	ErrInvalidValue = errors.New("invalid value")
	// ErrPlaceholder means an {env.NAME} or {file.PATH} placeholder could
	// not be replaced: the variable is not set, the file cannot be read, or
	// the placeholder is malformed.
	ErrPlaceholder = errors.New("placeholder")
	// ErrUnknownModule means a document names a module ID nobody registered.
	ErrUnknownModule = errors.New("unknown module")
	// ErrInvalidModuleID means a module ID does not have the ModuleID syntax.
	ErrInvalidModuleID = errors.New("invalid module ID")
	// ErrNotProvisioned is returned by an elector's backend operations when
	// its backend module is not provisioned (before the app starts, or after
	// it stopped).
	ErrNotProvisioned = errors.New("config: backend module not provisioned")
)

// PathError is an error at one place in a document: Path is the JSON path
// ("elections[1].backend.addr", "" for the whole document) and Err what is
// wrong there. Its message never contains a setting's value.
type PathError struct {
	Path string
	Err  error
}

// Error returns "path: err".
func (e *PathError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *PathError) Unwrap() error { return e.Err }

func pathErr(path string, err error) error { return &PathError{Path: path, Err: err} }

// redact passes the errors inside err's *PathErrors (and any other error in
// it) through backendkit.RedactError with secrets, keeping the paths and the
// *PathError type reachable with errors.As.
func redact(err error, secrets []string) error {
	if err == nil {
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, redact(e, secrets))
		}
		return errors.Join(out...)
	}
	if pe, ok := err.(*PathError); ok {
		return &PathError{Path: pe.Path, Err: backendkit.RedactError(pe.Err, secrets...)}
	}
	return backendkit.RedactError(err, secrets...)
}

// joinPath appends key to path ("a" + "b" = "a.b"); keys that are not
// identifiers are quoted (`metadata["a b"]`).
func joinPath(path, key string) string {
	if !isIdent(key) {
		return path + "[" + quoteKey(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '-')) {
			return false
		}
	}
	return true
}

// quoteKey quotes a key for a path, escaping anything unprintable, and
// shortening long keys: keys are names, not values, but they come from the
// document and end up in terminals.
func quoteKey(k string) string {
	const max = 64
	if len(k) > max {
		k = strings.ToValidUTF8(k[:max], "") + "…"
	}
	return strconvQuote(k)
}

// Context is what Provision receives: the fx start hook's context (it is a
// context.Context, so pass it to client calls directly), the app's logger,
// and ProvisionBackend for modules that load other modules. It is valid
// only during Provision.
type Context struct {
	context.Context
	logger *slog.Logger
	scope  *scope
}

// scope holds the nested modules one top-level module provisioned, to be
// cleaned up after it.
type scope struct {
	secrets  []string
	cleanups []func(ctx context.Context) error
}

func isContextCleanerUpper(m Module) bool {
	_, ok := m.(ContextCleanerUpper)
	return ok
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
	if c.scope == nil {
		return nil, errors.New("config: ProvisionBackend: called outside Provision")
	}
	m := ref.Module
	id := m.ElectionModule().ID
	wrap := func(op string, err error) error {
		return fmt.Errorf("nested %s %s: %w", id, op, redact(err, c.scope.secrets))
	}
	if _, ok := m.(CleanerUpper); ok || isContextCleanerUpper(m) {
		c.scope.cleanups = append(c.scope.cleanups, func(ctx context.Context) error {
			if err := safeCall(cleanupFunc(m, ctx)); err != nil {
				return wrap("cleanup", err)
			}
			return nil
		})
	}
	if prov, ok := m.(Provisioner); ok {
		if err := safeCall(func() error { return prov.Provision(c) }); err != nil {
			return nil, wrap("provision", err)
		}
	}
	var b fxelection.Backend
	err := safeCall(func() error {
		var err error
		b, err = m.Backend()
		if err == nil && b == nil {
			err = errors.New("nil Backend")
		}
		return err
	})
	if err != nil {
		return nil, wrap("backend", err)
	}
	return b, nil
}

// cleanup runs the nested modules' cleanups, last provisioned first, once,
// each with ctx (the hook's context).
func (s *scope) cleanup(ctx context.Context) error {
	var errs []error
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, s.cleanups[i](ctx))
	}
	s.cleanups = nil
	return errors.Join(errs...)
}

// safeCall runs fn, turning a panic into an error.
func safeCall(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

// Logger returns the app's *slog.Logger (from the fx graph), or a logger that
// discards everything; never nil.
func (c Context) Logger() *slog.Logger {
	if c.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.logger
}
