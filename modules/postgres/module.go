package pglease

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
)

func init() { config.RegisterModule(ConfigModule{}) }

// ConfigModule is the configuration-document module
// fxelection.backends.postgres: a Backend with a pgx pool of its own,
// created by Provision and closed by Cleanup. Its exported fields are its
// settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.postgres", "dsn": "{env.PG_DSN}",
//	 "table": "leases", "disable_push": true}
//
// Its errors, and every error the Backend returns, pass through
// backendkit.RedactError with the DSN's password in every spelling libpq
// accepts and the password pgx resolved (from the DSN, PGPASSWORD or a
// passfile).
type ConfigModule struct {
	// DSN is the pgx connection string (key=value or URL); it usually
	// embeds a password, so it is a secret. Required.
	DSN config.Secret `json:"dsn" config:"required"`
	// Table is Options.Table. Default: "fxelection_leases".
	Table string `json:"table,omitempty"`
	// Schema is Options.Schema. Default: the connection's search_path.
	Schema string `json:"schema,omitempty"`
	// Channel is Options.Channel. Default: "fxelection_wake".
	Channel string `json:"channel,omitempty"`
	// SkipCreateTable is Options.SkipCreateTable. Default: false.
	SkipCreateTable bool `json:"skip_create_table,omitempty"`
	// DisablePush is Options.DisablePush (set it behind a transaction-mode
	// pooler). Default: false.
	DisablePush bool `json:"disable_push,omitempty"`

	pool    *pgxpool.Pool // set by Provision, closed by Cleanup
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
		ID:  "fxelection.backends.postgres",
		Doc: "PostgreSQL lease table: server-clock expiry, LISTEN/NOTIFY wake-up",
		New: func() config.Module { return new(ConfigModule) },
	}
}

// settingLabel names an Options field by the module's JSON key.
func settingLabel(field string) string {
	switch field {
	case "Table":
		return "table"
	case "Schema":
		return "schema"
	case "Channel":
		return "channel"
	}
	return optionLabel(field)
}

func (m *ConfigModule) options() Options {
	return Options{
		Table:           m.Table,
		Schema:          m.Schema,
		Channel:         m.Channel,
		SkipCreateTable: m.SkipCreateTable,
		DisablePush:     m.DisablePush,
	}
}

// Validate checks the settings without I/O through the check New runs
// (Options.Validate): table, schema and channel must be valid identifiers.
// The DSN is parsed by Provision (parsing may read a passfile).
func (m *ConfigModule) Validate() error {
	_, err := m.options().normalize(settingLabel)
	return err
}

// Provision parses the DSN and creates the pool and the Backend. It does
// not connect: a database that is down is reported by the electors' first
// operations. The push listener's problems go to the app's logger.
func (m *ConfigModule) Provision(ctx config.Context) error {
	secrets := dsnSecrets(m.DSN.Value())
	cfg, err := pgxpool.ParseConfig(m.DSN.Value())
	if err != nil {
		// Not %w: the parse error may quote the DSN, and unwrapping would
		// reach the unredacted text.
		return fmt.Errorf("dsn: %s", backendkit.RedactText(err.Error(), secrets...))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("dsn: %s", backendkit.RedactText(err.Error(), secrets...))
	}
	m.pool = pool
	opts := m.options()
	opts.Logger = ctx.Logger()
	b, err := New(pool, opts)
	if err != nil {
		return backendkit.RedactError(err, secrets...)
	}
	b.secrets = append(b.secrets, secrets...)
	m.backend = b
	return nil
}

// Backend returns the provisioned Backend.
func (m *ConfigModule) Backend() (fxelection.Backend, error) {
	if m.backend == nil {
		return nil, errors.New("pglease: module not provisioned")
	}
	return m.backend, nil
}

// Cleanup stops the push listener and closes the pool. It is safe after a
// failed or missing Provision.
func (m *ConfigModule) Cleanup() error {
	if m.backend != nil {
		_ = m.backend.Close() // always nil
		m.backend = nil
	}
	if m.pool != nil {
		m.pool.Close()
		m.pool = nil
	}
	return nil
}
