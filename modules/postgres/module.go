package pglease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// DefaultCloseTimeout is ConfigModule.CloseTimeout's default.
const DefaultCloseTimeout = 500 * time.Millisecond

// ErrInvalidSettings is matched by ConfigModule.Validate's errors for a
// malformed dsn or a negative close_timeout (a bad table, schema or channel
// matches ErrInvalidIdentifier).
var ErrInvalidSettings = errors.New("pglease: invalid settings")

// ConfigModule is the configuration-document module
// fxelection.backends.postgres: a Backend with a pgx pool of its own,
// created by Provision and closed by CleanupContext (or Cleanup). Its exported fields are its
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
	DSN modkit.Secret `json:"dsn" config:"required"`
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
	// CloseTimeout bounds how long clean-up waits for the pool to close
	// (pgxpool.Pool.Close waits for every connection, up to 15 s each
	// against a server that does not answer); after it, or at the end of
	// fx's stop deadline if that comes first, the close finishes in the
	// background. Must not be negative. Default (also for "0s"): 500ms.
	CloseTimeout modkit.Duration `json:"close_timeout,omitempty"`

	// The Backend, from Provision; CleanupContext stops its push listener
	// before it closes the pool (which needs a deadline: see there).
	modkit.Provisioned[ConfigModule]
	pool *pgxpool.Pool // set by Provision, closed by CleanupContext
	log  *slog.Logger  // the app's, from Provision
}

var (
	_ modkit.ClientBackendModule = (*ConfigModule)(nil)
	_ modkit.ContextCleanerUpper = (*ConfigModule)(nil)
)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.postgres",
		"PostgreSQL lease table: server-clock expiry, LISTEN/NOTIFY wake-up")
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

// Validate checks the settings without network I/O: the DSN must parse
// (pgxpool.ParseConfig, which dials nothing but, as libpq does, may read
// the passfile and the service file it names), close_timeout must not be
// negative, and table, schema and channel must be valid identifiers
// (Options.Validate, the check New runs). Errors name the setting and
// never quote the DSN.
func (m *ConfigModule) Validate() error {
	if _, err := pgxpool.ParseConfig(m.DSN.Value()); err != nil {
		// Not even redacted: pgx's message quotes the connection string.
		return fmt.Errorf("%w: dsn: not a valid connection string (key=value pairs or a postgres:// URL, with pool_ settings pgxpool knows)", ErrInvalidSettings)
	}
	if m.CloseTimeout < 0 {
		return fmt.Errorf("%w: close_timeout: must not be negative", ErrInvalidSettings)
	}
	_, err := m.options().normalize(modkit.SettingLabel[ConfigModule])
	return err
}

// Provision parses the DSN and creates the pool and the Backend. It does
// not connect: a database that is down is reported by the electors' first
// operations. The push listener's problems go to the app's logger.
func (m *ConfigModule) Provision(ctx modkit.Context) error {
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
	m.log = ctx.Logger()
	opts := m.options()
	opts.Logger = m.log
	b, err := newBackend(pool, opts, secrets...)
	if err != nil {
		return backendkit.RedactError(err, secrets...)
	}
	m.Provide(b)
	return nil
}

// Cleanup is CleanupContext without a deadline of its own (still bounded by
// close_timeout). The config package calls CleanupContext.
func (m *ConfigModule) Cleanup() error { return m.CleanupContext(context.Background()) }

// CleanupContext stops the push listener and closes the pool. It waits for
// the close at most close_timeout and never past ctx's end: pgx's close
// waits for every connection, and against a server that does not answer
// (frozen, or a network partition) it takes up to 15 s per connection.
// Then CleanupContext returns nil and logs a warning, and the close
// finishes in the background (pgx bounds it), so fx's stop is not held up.
// It is safe after a failed or missing Provision, and more than once.
func (m *ConfigModule) CleanupContext(ctx context.Context) error {
	_ = m.Provisioned.Cleanup() // the Backend's Close is always nil; the pool is not owned there
	pool := m.pool
	if pool == nil {
		return nil
	}
	m.pool = nil
	done := make(chan struct{})
	go func() { // owned by pgx's own bound on Close; nothing else to stop
		defer close(done)
		pool.Close()
	}()
	wait := time.Duration(m.CloseTimeout)
	if wait == 0 {
		wait = DefaultCloseTimeout
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	if m.log != nil {
		m.log.Warn("pglease: the pool is still closing (the server does not answer); the close finishes in the background",
			"waited", wait.String(), "stop_deadline_passed", ctx.Err() != nil)
	}
	return nil
}
