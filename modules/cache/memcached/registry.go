package memcachedlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// Settings keys read by the "memcached" registry entry.
const (
	SettingAddr    = "addr"    // host:port of the servers, comma-separated. Required.
	SettingTimeout = "timeout" // socket read/write timeout (memcache.Client.Timeout). Default 1s.
	SettingPrefix  = "prefix"  // cachelease.Options.KeyPrefix. Default "fxelection.".
)

// DefaultTimeout is the client timeout of registry-built backends.
const DefaultTimeout = time.Second

func init() {
	fxelection.RegisterBackend(fxelection.BackendModule{
		Name: "memcached",
		Doc:  "memcached (add + gets/cas, server TTL in whole seconds); settings: addr (required), timeout, prefix",
		New:  NewFromSettings,
	})
}

// NewFromSettings builds a Backend with a client of its own from
// configuration (the keys are the Setting* constants). It connects to
// nothing (host names are resolved once, here): a server that is down is
// reported by the elector's first operations. The
// returned Backend owns the client and implements io.Closer. Errors name
// the setting, never its value.
func NewFromSettings(_ context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	addr, err := s.Required(SettingAddr)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("setting %q is required", SettingAddr)
	}
	for i, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("setting %q: address %d is not host:port", SettingAddr, i+1)
		}
	}
	timeout, err := s.Duration(SettingTimeout, DefaultTimeout)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("setting %q must be positive", SettingTimeout)
	}
	var sl memcache.ServerList
	if err := sl.SetServers(addrs...); err != nil {
		return nil, fmt.Errorf("setting %q: %w", SettingAddr, errors.New("cannot resolve the servers"))
	}
	client := memcache.NewFromSelector(&sl)
	client.Timeout = timeout
	client.MaxIdleConns = 16
	b, err := New(client, cachelease.Options{KeyPrefix: s.String(SettingPrefix, "")})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("setting %q: %w", SettingPrefix, err)
	}
	return &ownedBackend{Backend: b, client: client}, nil
}

// ownedBackend is a Backend that owns its client.
type ownedBackend struct {
	*cachelease.Backend
	client *memcache.Client
}

var (
	_ fxelection.Backend = (*ownedBackend)(nil)
	_ io.Closer          = (*ownedBackend)(nil)
)

// Close closes the client's idle connections. Stop the electors that use
// the Backend first.
func (o *ownedBackend) Close() error {
	_ = o.Backend.Close()
	if err := o.client.Close(); err != nil {
		return fmt.Errorf("close memcached client: %w", err)
	}
	return nil
}
