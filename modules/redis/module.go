package redislease

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
)

func init() { config.RegisterModule(ConfigModule{}) }

// ConfigModule is the configuration-document module
// fxelection.backends.redis: a Backend with a Redis client of its own
// (single node, Sentinel or Cluster), created by Provision and closed by
// Cleanup. Its exported fields are its settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.redis", "addr": "redis:6379",
//	 "password": "{env.REDIS_PASSWORD}", "prefix": "billing:"}
//
// Errors never contain the password or the user name, and never quote addr
// (a URL pasted there may carry a password: URLs are refused).
type ConfigModule struct {
	// Addr is the server's host:port; for Cluster, several, comma-separated;
	// with Master, the Sentinels' addresses. Not a URL. Required.
	Addr string `json:"addr" config:"required"`
	// Master is the Sentinel master name; Addr then lists the Sentinels.
	// Default: none (no Sentinel).
	Master string `json:"master,omitempty"`
	// Username is the ACL user name. Default: none.
	Username string `json:"username,omitempty"`
	// Password is the password; never logged or put in errors. Default: none.
	Password config.Secret `json:"password,omitempty"`
	// DB is the database number; Cluster has only 0. Default: 0.
	DB int `json:"db,omitempty"`
	// TLS connects with TLS (1.2 or later; the server name is each
	// address's host). Default: false.
	TLS bool `json:"tls,omitempty"`
	// Prefix is Options.KeyPrefix. Default: "fxelection:".
	Prefix string `json:"prefix,omitempty"`
	// Push, when false, sets Options.DisablePush. Default: true.
	Push *bool `json:"push,omitempty"`
	// SequentialTerms is Options.SequentialTerms. Default: false.
	SequentialTerms bool `json:"sequential_terms,omitempty"`

	client  redis.UniversalClient // set by Provision, closed by Cleanup
	backend *Backend
}

var (
	_ config.BackendModule = (*ConfigModule)(nil)
	_ config.Validator     = (*ConfigModule)(nil)
	_ config.Provisioner   = (*ConfigModule)(nil)
	_ config.CleanerUpper  = (*ConfigModule)(nil)
)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() config.ModuleInfo {
	return config.ModuleInfo{
		ID:  "fxelection.backends.redis",
		Doc: "Redis or Valkey (single node, Sentinel or Cluster): server-side expiry, push wake-up",
		New: func() config.Module { return new(ConfigModule) },
	}
}

// settingLabel names an Options field by the module's JSON key.
func settingLabel(field string) string {
	switch field {
	case "KeyPrefix":
		return "prefix"
	case "DisablePush":
		return "push"
	case "SequentialTerms":
		return "sequential_terms"
	}
	return optionLabel(field)
}

// options returns the Options the settings describe.
func (m *ConfigModule) options() Options {
	return Options{
		KeyPrefix:       m.Prefix,
		DisablePush:     m.Push != nil && !*m.Push,
		SequentialTerms: m.SequentialTerms,
	}
}

// addrs splits Addr and checks each address is host:port. Errors never
// quote the value.
func (m *ConfigModule) addrs() ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(m.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: addr: no address", ErrInvalidOptions)
	}
	for i, a := range addrs {
		if strings.Contains(a, "://") {
			return nil, fmt.Errorf("%w: addr: address %d is a URL; give host:port, and the username and password settings", ErrInvalidOptions, i+1)
		}
		if _, _, err := net.SplitHostPort(a); err != nil || strings.ContainsAny(a, "@/") {
			return nil, fmt.Errorf("%w: addr: address %d is not host:port", ErrInvalidOptions, i+1)
		}
	}
	return addrs, nil
}

// Validate checks the settings without I/O: addr, db, and the Options they
// make through Options.Validate (the check New runs). Errors match
// ErrInvalidOptions and name the setting.
func (m *ConfigModule) Validate() error {
	addrs, err := m.addrs()
	if err != nil {
		return err
	}
	if m.DB < 0 {
		return fmt.Errorf("%w: db: must not be negative", ErrInvalidOptions)
	}
	if m.DB != 0 && len(addrs) > 1 && m.Master == "" {
		return fmt.Errorf("%w: db: Redis Cluster has only database 0", ErrInvalidOptions)
	}
	return m.options().validate(settingLabel)
}

// Provision creates the client and the Backend. It does no I/O: a server
// that is down is reported by the electors' first operations.
func (m *ConfigModule) Provision(config.Context) error {
	addrs, err := m.addrs()
	if err != nil {
		return err
	}
	opts := &redis.UniversalOptions{
		Addrs:                 addrs,
		MasterName:            m.Master,
		Username:              m.Username,
		Password:              m.Password.Value(),
		DB:                    m.DB,
		ContextTimeoutEnabled: true,
	}
	if m.TLS {
		// The server name is taken from each address when dialling.
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	m.client = redis.NewUniversalClient(opts)
	m.backend, err = New(m.client, m.options())
	return err
}

// Backend returns the provisioned Backend.
func (m *ConfigModule) Backend() (fxelection.Backend, error) {
	if m.backend == nil {
		return nil, errors.New("redislease: module not provisioned")
	}
	return m.backend, nil
}

// Cleanup stops push wake-up and closes the client. It is safe after a
// failed or missing Provision, and runs after every elector using the
// Backend has stopped.
func (m *ConfigModule) Cleanup() error {
	if m.backend != nil {
		_ = m.backend.Close() // always nil
		m.backend = nil
	}
	if m.client == nil {
		return nil
	}
	err := m.client.Close()
	m.client = nil
	if err != nil {
		return backendkit.RedactError(fmt.Errorf("close redis client: %w", err), backendkit.Credentials(m.Username, m.Password.Value())...)
	}
	return nil
}
