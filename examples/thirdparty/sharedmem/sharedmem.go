// Package sharedmem is an example of a third-party backend module: it lives
// outside package config, registers itself from init, and becomes usable in
// configuration documents by import alone:
//
//	import _ "github.com/fxelection/fxelection/examples/thirdparty/sharedmem"
//
//	{"elections": [{"name": "jobs", "backend": {
//	  "module": "fxelection.backends.sharedmem", "store": "cluster-a", "token": "{env.STORE_TOKEN}"}}]}
//
// It provides process-wide named in-memory stores: every app in the process
// that names the same store shares its leases, so separate fx apps in one
// process (tests, a supervisor running several workers) compete in one
// election. A store exists while some provisioned module uses it. The first
// user of a store sets its token; later users must present the same one.
// It exercises every part of the module life cycle: strict settings,
// Validate, Provision, Backend and Cleanup.
package sharedmem

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(Module{}) }

// ErrTokenRejected means a store is in use with a different token.
var ErrTokenRejected = errors.New("sharedmem: token rejected")

// Module is the fxelection.backends.sharedmem module's settings.
type Module struct {
	// Store names the shared store: 1 to 64 lower-case letters, digits and
	// dashes. Required.
	Store string `json:"store" config:"required"`
	// Token guards the store: the first user sets it, later users must
	// match it. Default: empty (no token).
	Token modkit.Secret `json:"token,omitempty"`

	st *store // set by Provision, cleared by Cleanup
}

var (
	_ modkit.BackendModule = (*Module)(nil)
	_ modkit.Validator     = (*Module)(nil)
	_ modkit.Provisioner   = (*Module)(nil)
	_ modkit.CleanerUpper  = (*Module)(nil)
)

// ElectionModule returns the module's ModuleInfo.
func (Module) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{
		ID:  "fxelection.backends.sharedmem",
		Doc: "example third-party module: process-wide named in-memory stores shared by several fx apps",
		New: func() modkit.Module { return new(Module) },
	}
}

// Validate checks the store name; it does no I/O.
func (m *Module) Validate() error {
	if len(m.Store) == 0 || len(m.Store) > 64 {
		return errors.New("store: want 1 to 64 characters")
	}
	for _, c := range m.Store {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return errors.New("store: want lower-case letters, digits and dashes")
		}
	}
	return nil
}

// Provision joins (or creates) the store, checking the token.
func (m *Module) Provision(modkit.Context) error {
	st, err := join(m.Store, m.Token.Value())
	if err != nil {
		return err
	}
	m.st = st
	return nil
}

// Backend returns the store's backend.
func (m *Module) Backend() (fxelection.Backend, error) {
	if m.st == nil {
		return nil, errors.New("sharedmem: not provisioned")
	}
	return m.st.backend, nil
}

// Cleanup leaves the store; the last user's Cleanup drops it. It is safe
// after a failed or missing Provision.
func (m *Module) Cleanup() error {
	if m.st != nil {
		leave(m.Store, m.st)
		m.st = nil
	}
	return nil
}

type store struct {
	backend *memory.Backend
	token   string
	users   int
}

var stores = struct {
	sync.Mutex
	m map[string]*store
}{m: map[string]*store{}}

func join(name, token string) (*store, error) {
	stores.Lock()
	defer stores.Unlock()
	st := stores.m[name]
	if st == nil {
		st = &store{backend: memory.New(), token: token}
		stores.m[name] = st
	} else if subtle.ConstantTimeCompare([]byte(st.token), []byte(token)) != 1 {
		return nil, fmt.Errorf("%w for store %q", ErrTokenRejected, name)
	}
	st.users++
	return st, nil
}

func leave(name string, st *store) {
	stores.Lock()
	defer stores.Unlock()
	st.users--
	if st.users == 0 && stores.m[name] == st {
		delete(stores.m, name)
	}
}

// Users returns how many provisioned modules use the named store (for
// tests and diagnostics).
func Users(name string) int {
	stores.Lock()
	defer stores.Unlock()
	if st := stores.m[name]; st != nil {
		return st.users
	}
	return 0
}
