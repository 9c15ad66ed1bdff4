package modkit

import (
	"github.com/fxelection/fxelection/fxelection/internal/settings"

	"errors"
	"fmt"
	"reflect"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// ClientBackendModule is a BackendModule that builds a client of its own: it
// checks its settings (Validator), creates the client and the Backend
// (Provisioner) and closes them (CleanerUpper). A backend package states it
// with one compile-time guard:
//
//	var _ modkit.ClientBackendModule = (*ConfigModule)(nil)
type ClientBackendModule interface {
	BackendModule
	Validator
	Provisioner
	CleanerUpper
}

// NewModuleInfo returns the ModuleInfo of the module whose config struct is
// M: id, doc, and a New that returns a new, empty *M. A module's
// ElectionModule method is then one line:
//
//	func (ConfigModule) ElectionModule() modkit.ModuleInfo {
//		return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.redis", "Redis …")
//	}
//
// RegisterModule checks the result as it checks any ModuleInfo.
func NewModuleInfo[M any, PM interface {
	*M
	Module
}](id ModuleID, doc string) ModuleInfo {
	return ModuleInfo{ID: id, Doc: doc, New: func() Module { return PM(new(M)) }}
}

// Provisioned is what a backend module's Provision leaves for the rest of
// its life: the Backend it built, and the clients it created for it. Embed
// it in the module's config struct, with M the struct itself, so the
// module gets its Backend and Cleanup methods:
//
//	type ConfigModule struct {
//		Addr string `json:"addr" config:"required"`
//		modkit.Provisioned[ConfigModule]
//	}
//
// In Provision, call Own for each client as soon as it exists (so a
// Provision that fails later still closes it), then Provide with the
// Backend. A Provisioned has no settings and its zero value is ready to
// use; it is not safe for concurrent use, which the config package's life
// cycle never needs.
type Provisioned[M Module] struct {
	backend fxelection.Backend
	owned   []owned
}

// owned is a client a module created: close frees it, what names it in
// errors ("redis client"), and secrets are withheld from its error.
type owned struct {
	what    string
	close   func() error
	secrets []string
}

// Own records a client the module created: Cleanup calls close (clients
// last owned first, after closing the Backend) and reports its error as
// "close <what>: <error>", passed through backendkit.RedactError with
// secrets (the credentials the client was given). A nil close is ignored.
func (p *Provisioned[M]) Own(what string, close func() error, secrets ...string) {
	if close != nil {
		p.owned = append(p.owned, owned{what: what, close: close, secrets: secrets})
	}
}

// Provide records the Backend Provision built; Backend returns it until
// Cleanup.
func (p *Provisioned[M]) Provide(b fxelection.Backend) { p.backend = b }

// Backend returns the Backend given to Provide. Before Provision, after a
// failed one and after Cleanup it returns an error that names the module
// by its ID and matches ErrNotProvisioned.
func (p *Provisioned[M]) Backend() (fxelection.Backend, error) {
	if p.backend == nil {
		return nil, fmt.Errorf("%s: %w", moduleID[M](), ErrNotProvisioned)
	}
	return p.backend, nil
}

// Cleanup closes the Backend (when it has a Close method: push wake-up
// stops), then every client given to Own, last first, and forgets them all.
// It is safe after a failed or missing Provision and more than once; it
// returns the close errors joined (errors.Join), passed through
// backendkit.RedactError with the secrets given to Own.
func (p *Provisioned[M]) Cleanup() error {
	var errs []error
	if c, ok := p.backend.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close backend: %w", err))
		}
	}
	p.backend = nil
	owned := p.owned
	p.owned = nil
	var secrets []string
	for i := len(owned) - 1; i >= 0; i-- {
		secrets = append(secrets, owned[i].secrets...)
		if err := owned[i].close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", owned[i].what, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return backendkit.RedactError(errors.Join(errs...), secrets...)
}

// moduleID returns the ID of the module whose config type is M (a struct,
// or a pointer to one).
func moduleID[M Module]() ModuleID {
	var m M
	if t := reflect.TypeFor[M](); t.Kind() == reflect.Pointer {
		m = reflect.New(t.Elem()).Interface().(M)
	}
	return m.ElectionModule().ID
}

// SettingLabel names a field of a backend's Options by the JSON key of the
// setting of module M (a config struct) that sets it, for the errors of
// validation functions that take a label function (Options fields for the
// plain constructor, JSON keys for the module). The setting is the field of
// M tagged `option:"<field>"`, else the one with the same Go name; a field
// no setting sets is labelled "Options.<field>":
//
//	type ConfigModule struct {
//		Prefix string `json:"prefix,omitempty" option:"KeyPrefix"`
//		Table  string `json:"table,omitempty"` // Options.Table
//	}
//
//	modkit.SettingLabel[ConfigModule]("KeyPrefix") // "prefix"
func SettingLabel[M any](field string) string {
	t := reflect.TypeFor[M]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && field != "" {
		fields := settings.Of(t).List
		for _, f := range fields {
			if t.FieldByIndex(f.Index).Tag.Get("option") == field {
				return f.Key
			}
		}
		for _, f := range fields {
			if t.FieldByIndex(f.Index).Name == field {
				return f.Key
			}
		}
	}
	return "Options." + field
}
