package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
)

// Until every backend package registers a typed module
// (fxelection.backends.<name>), the example registers a stand-in for each
// backend of the flat registry (fxelection.RegisterBackend) that its flag
// table feeds and that has no typed module: a module with the table's
// setting names as JSON keys, which checks and builds the backend through
// fxelection.NewBackend. Once a typed module is registered under the name,
// the stand-in is not (registration happens after every imported package's
// init), so the typed module always wins.
func init() {
	for _, name := range flatFallbacks() {
		config.RegisterModule(flatModule{name: name})
	}
}

// flatFallbacks returns the flat-registry backends that need a stand-in.
func flatFallbacks() []string {
	var out []string
	for _, name := range fxelection.Backends() {
		if len(flatKeys(name)) == 0 {
			continue // no settings the flags feed (memory): nothing to stand in for
		}
		if _, err := config.GetModule(config.ModuleID(config.BackendsNamespace + "." + name)); err == nil {
			continue
		}
		out = append(out, name)
	}
	return out
}

// flatKeys are the settings the flag table feeds for backend name.
func flatKeys(name string) []string {
	var o options
	var keys []string
	for _, d := range o.flagTable() {
		if d.backend == name && d.setting != "" {
			keys = append(keys, d.setting)
		}
	}
	return keys
}

// flatModule is the stand-in module fxelection.backends.<name> for a
// flat-registry backend. Its fields are the union of the flag table's
// settings; Validate rejects those of other backends.
type flatModule struct {
	name string

	Addr             string        `json:"addr,omitempty"`
	Username         string        `json:"username,omitempty"`
	Password         config.Secret `json:"password,omitempty"`
	DB               int           `json:"db,omitempty"`
	TLS              bool          `json:"tls,omitempty"`
	DSN              config.Secret `json:"dsn,omitempty"`
	Endpoint         string        `json:"endpoint,omitempty"`
	Bucket           string        `json:"bucket,omitempty"`
	AccessKey        string        `json:"access_key,omitempty"`
	SecretKey        config.Secret `json:"secret_key,omitempty"`
	Region           string        `json:"region,omitempty"`
	Secure           *bool         `json:"secure,omitempty"`
	ConnectionString config.Secret `json:"connection_string,omitempty"`
	Container        string        `json:"container,omitempty"`

	backend fxelection.Backend
}

var (
	_ config.BackendModule = (*flatModule)(nil)
	_ config.Validator     = (*flatModule)(nil)
	_ config.Provisioner   = (*flatModule)(nil)
	_ config.CleanerUpper  = (*flatModule)(nil)
)

// ElectionModule returns the module's ModuleInfo.
func (m flatModule) ElectionModule() config.ModuleInfo {
	name := m.name
	return config.ModuleInfo{
		ID:  config.ModuleID(config.BackendsNamespace + "." + name),
		Doc: "stand-in for the flat-registry backend " + strconv.Quote(name) + " (settings: the example-app flag table's)",
		New: func() config.Module { return &flatModule{name: name} },
	}
}

// settings returns the flat settings, or an error naming a key that the
// backend does not take. They hold secrets: never log them.
func (m *flatModule) settings() (fxelection.Settings, error) {
	all := map[string]string{}
	set := func(k, v string, given bool) {
		if given {
			all[k] = v
		}
	}
	set("addr", m.Addr, m.Addr != "")
	set("username", m.Username, m.Username != "")
	set("password", m.Password.Value(), !m.Password.IsZero())
	set("db", strconv.Itoa(m.DB), m.DB != 0)
	set("tls", strconv.FormatBool(m.TLS), m.TLS)
	set("dsn", m.DSN.Value(), !m.DSN.IsZero())
	set("endpoint", m.Endpoint, m.Endpoint != "")
	set("bucket", m.Bucket, m.Bucket != "")
	set("access_key", m.AccessKey, m.AccessKey != "")
	set("secret_key", m.SecretKey.Value(), !m.SecretKey.IsZero())
	set("region", m.Region, m.Region != "")
	if m.Secure != nil {
		set("secure", strconv.FormatBool(*m.Secure), true)
	}
	set("connection_string", m.ConnectionString.Value(), !m.ConnectionString.IsZero())
	set("container", m.Container, m.Container != "")
	keys := flatKeys(m.name)
	s := fxelection.Settings{}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if !slices.Contains(keys, k) {
			return nil, fmt.Errorf("%w: %s is not a setting of backend %s", config.ErrUnknownKey, k, m.name)
		}
		s[k] = all[k]
	}
	return s, nil
}

// Validate checks the settings by building the backend (flat-registry
// constructors do no I/O) and closing it at once.
func (m *flatModule) Validate() error {
	s, err := m.settings()
	if err != nil {
		return err
	}
	b, err := fxelection.NewBackend(context.Background(), m.name, s)
	if err != nil {
		return err
	}
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
	return nil
}

// Provision builds the backend.
func (m *flatModule) Provision(ctx config.Context) error {
	s, err := m.settings()
	if err != nil {
		return err
	}
	m.backend, err = fxelection.NewBackend(ctx, m.name, s)
	return err
}

// Backend returns what Provision built.
func (m *flatModule) Backend() (fxelection.Backend, error) { return m.backend, nil }

// Cleanup closes the backend's client.
func (m *flatModule) Cleanup() error {
	if c, ok := m.backend.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
