package redislease

import (
	"crypto/tls"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
)

func init() { config.RegisterModule(ConfigModule{}) }

// MaxDB is the highest database number the module accepts: Redis has 16
// databases (0–15) unless its "databases" setting says otherwise, and a
// number the server does not have fails only at the first SELECT.
const MaxDB = 15

// ValidateDB is the rule for a database number, the "db" setting's and
// every flag's that feeds it: 0 to MaxDB. Its error states the range and
// does not quote n.
func ValidateDB(n int) error {
	if n < 0 || n > MaxDB {
		return fmt.Errorf("must be between 0 and %d", MaxDB)
	}
	return nil
}

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
	// DB is the database number, 0 to MaxDB (ValidateDB); Cluster has
	// only 0. Default: 0.
	DB int `json:"db,omitempty"`
	// TLS connects with TLS (1.2 or later; the server name is each
	// address's host). Default: false.
	TLS bool `json:"tls,omitempty"`
	// Prefix is Options.KeyPrefix. Default: "fxelection:".
	Prefix string `json:"prefix,omitempty" option:"KeyPrefix"`
	// Push, when false, sets Options.DisablePush. Default: true.
	Push *bool `json:"push,omitempty" option:"DisablePush"`

	// The Backend and its client, from Provision; Cleanup stops push
	// wake-up and closes the client.
	config.Provisioned[ConfigModule]
}

var _ config.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() config.ModuleInfo {
	return config.NewModuleInfo[ConfigModule]("fxelection.backends.redis",
		"Redis or Valkey (single node, Sentinel or Cluster): server-side expiry, push wake-up")
}

// options returns the Options the settings describe.
func (m *ConfigModule) options() Options {
	return Options{
		KeyPrefix:   m.Prefix,
		DisablePush: m.Push != nil && !*m.Push,
	}
}

// addrs splits Addr and checks each address with config.HostPorts. Errors
// match ErrInvalidOptions and config.ErrInvalidAddress and never quote the
// value.
func (m *ConfigModule) addrs() ([]string, error) {
	addrs, err := config.HostPorts("addr", m.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
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
	if err := ValidateDB(m.DB); err != nil {
		return fmt.Errorf("%w: db: %w", ErrInvalidOptions, err)
	}
	if m.DB != 0 && len(addrs) > 1 && m.Master == "" {
		return fmt.Errorf("%w: db: Redis Cluster has only database 0", ErrInvalidOptions)
	}
	return m.options().validate(config.SettingLabel[ConfigModule])
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
	client := redis.NewUniversalClient(opts)
	m.Own("redis client", client.Close, backendkit.Credentials(m.Username, m.Password.Value())...)
	b, err := New(client, m.options())
	if err != nil {
		return err
	}
	m.Provide(b)
	return nil
}
