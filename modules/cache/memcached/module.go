package memcachedlease

import (
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection/modkit"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// DefaultTimeout is the client timeout of a ConfigModule whose Timeout is
// zero.
const DefaultTimeout = time.Second

// ErrInvalidSettings is matched by ConfigModule.Validate's errors for a bad
// addr or timeout (a bad prefix matches cachelease.ErrInvalidPrefix).
var ErrInvalidSettings = errors.New("memcachedlease: invalid settings")

// ConfigModule is the configuration-document module
// fxelection.backends.memcached: a Backend with a memcached client of its
// own, created by Provision and closed by Cleanup. Its exported fields are
// its settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.memcached", "addr": "10.0.0.1:11211,10.0.0.2:11211",
//	 "timeout": "1s", "prefix": "billing."}
//
// Errors never quote addr.
type ConfigModule struct {
	// Addr is the servers' host:port, comma-separated; keys are sharded
	// across them by a ServerSet, which depends on the set of addresses
	// only (order and repetitions do not matter), so every candidate of an
	// election must list the same set, spelled the same way. Host names
	// are resolved at each connection, not once. Not a URL. Required.
	Addr string `json:"addr" config:"required"`
	// Timeout bounds each gomemcache call (memcache.Client.Timeout:
	// gomemcache has no context support). Backend calls return at their
	// context's end even so; a call abandoned then runs on in the
	// background until Timeout. Must not be negative. Default (also for
	// "0s"): 1s.
	Timeout modkit.Duration `json:"timeout,omitempty"`
	// Prefix is cachelease.Options.KeyPrefix. Default: "fxelection.".
	Prefix string `json:"prefix,omitempty"`

	// The Backend and its client, from Provision; Cleanup closes the
	// client's connections.
	modkit.Provisioned[ConfigModule]
	client *memcache.Client // set by Provision, dropped by Cleanup
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.memcached",
		"memcached (add + gets/cas): server-side expiry in whole seconds, no push wake-up")
}

// options returns the cachelease.Options the settings describe.
func (m *ConfigModule) options() cachelease.Options {
	return cachelease.Options{KeyPrefix: m.Prefix}
}

// timeout returns Timeout or its default.
func (m *ConfigModule) timeout() time.Duration {
	if m.Timeout == 0 {
		return DefaultTimeout
	}
	return time.Duration(m.Timeout)
}

// addrs splits Addr and checks each address with modkit.HostPorts, and
// that a ServerSet can name it (a host is given, of letters, digits, '-',
// '.' and '_', or an IP address). Errors match ErrInvalidSettings and
// modkit.ErrInvalidAddress and never quote the value.
func (m *ConfigModule) addrs() ([]string, error) {
	addrs, err := modkit.HostPorts("addr", m.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSettings, err)
	}
	for i, a := range addrs {
		if _, ok := normaliseAddr(a); !ok {
			return nil, fmt.Errorf("%w: addr: address %d is not host:port (the host must be a name or an IP address)", ErrInvalidSettings, i+1)
		}
	}
	return addrs, nil
}

// Validate checks the settings without I/O: addr, timeout, and the
// cachelease.Options they make through cachelease.Options.Validate with
// memcached's capabilities, the check New runs. It reports every problem
// (errors.Join); each error names its setting.
func (m *ConfigModule) Validate() error {
	var errs []error
	if _, err := m.addrs(); err != nil {
		errs = append(errs, err)
	}
	if m.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: timeout: must not be negative", ErrInvalidSettings))
	}
	if err := m.options().Validate(capabilities); err != nil {
		errs = append(errs, fmt.Errorf("prefix: %w", err))
	}
	return errors.Join(errs...)
}

// Provision creates the client, on a ServerSet of the addresses (the same
// election lands on the same server whatever their order and repetitions),
// and the Backend. It does no I/O: host names are resolved by the client
// each time it connects, not pinned here, and a server that is down is
// reported by the electors' first operations.
func (m *ConfigModule) Provision(modkit.Context) error {
	addrs, err := m.addrs()
	if err != nil {
		return err
	}
	servers, err := NewServerSet(addrs...)
	if err != nil {
		return fmt.Errorf("%w: addr: %w", ErrInvalidSettings, err)
	}
	client := memcache.NewFromSelector(servers)
	client.Timeout = m.timeout()
	client.MaxIdleConns = 16
	m.client = client
	m.Own("memcached client", func() error { m.client = nil; return client.Close() })
	b, err := New(client, m.options())
	if err != nil {
		return fmt.Errorf("prefix: %w", err)
	}
	m.Provide(b)
	return nil
}
