package fxelection

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BackendModule is a backend kind that programs can pick by name from their
// configuration (`backend: redis`), Caddy-style. Backend packages register
// one from init with RegisterBackend; importing the package is what makes
// the name available.
type BackendModule struct {
	// Name is how configuration refers to the backend ("redis", "postgres").
	Name string
	// Doc is a one-line description, listing the settings it reads.
	Doc string
	// New builds a backend from settings. It owns whatever client it creates:
	// if the returned Backend implements io.Closer, the caller closes it.
	New func(ctx context.Context, s Settings) (Backend, error)
}

// registry holds the registered backend modules. It is written only by init
// functions through RegisterBackend and read afterwards.
var registry = struct {
	sync.RWMutex
	m map[string]BackendModule
}{m: map[string]BackendModule{}}

// RegisterBackend makes m available by name. Call it only from init; it does
// no I/O. It panics on an empty name, a nil constructor or a duplicate name,
// as caddy.RegisterModule does, because those are programming errors found at
// start-up.
func RegisterBackend(m BackendModule) {
	if m.Name == "" {
		panic("fxelection: RegisterBackend: empty name")
	}
	if m.New == nil {
		panic(fmt.Sprintf("fxelection: RegisterBackend(%q): nil New", m.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[m.Name]; dup {
		panic(fmt.Sprintf("fxelection: RegisterBackend: backend %q already registered", m.Name))
	}
	registry.m[m.Name] = m
}

// Backends returns the registered backend names, sorted.
func Backends() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupBackend returns the module registered under name.
func LookupBackend(name string) (BackendModule, bool) {
	registry.RLock()
	defer registry.RUnlock()
	m, ok := registry.m[name]
	return m, ok
}

// NewBackend builds the backend registered under name from settings. An
// unknown name is an error that lists the registered ones.
func NewBackend(ctx context.Context, name string, s Settings) (Backend, error) {
	m, ok := LookupBackend(name)
	if !ok {
		return nil, fmt.Errorf("fxelection: unknown backend %q (registered: %s)", name, strings.Join(Backends(), ", "))
	}
	b, err := m.New(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("fxelection: backend %q: %w", name, err)
	}
	return b, nil
}

// Settings are a registered backend's configuration as flat string keys
// ("addr", "password", "dsn", …), as they come from flags, environment
// variables or a config file. The typed getters return errors that name the
// key. Settings never appear in errors or logs with their values, so secrets
// stay out of them.
type Settings map[string]string

// String returns s[key], or def when it is absent or empty.
func (s Settings) String(key, def string) string {
	if v := s[key]; v != "" {
		return v
	}
	return def
}

// Required returns s[key], or an error naming key when it is absent or empty.
func (s Settings) Required(key string) (string, error) {
	if v := s[key]; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("setting %q is required", key)
}

// Int returns s[key] as an int, def when absent.
func (s Settings) Int(key string, def int) (int, error) {
	v := s[key]
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("setting %q: not an integer", key)
	}
	return n, nil
}

// Bool returns s[key] as a bool (strconv.ParseBool), def when absent.
func (s Settings) Bool(key string, def bool) (bool, error) {
	v := s[key]
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("setting %q: not a boolean", key)
	}
	return b, nil
}

// Duration returns s[key] as a time.Duration ("1.5s"), def when absent.
func (s Settings) Duration(key string, def time.Duration) (time.Duration, error) {
	v := s[key]
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("setting %q: not a duration", key)
	}
	return d, nil
}
