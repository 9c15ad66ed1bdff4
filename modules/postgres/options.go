package pglease

import (
	"context"
	"errors"
	"log/slog"

	"github.com/fxelection/fxelection/modules/postgres/internal/pgident"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults for Options' zero values.
const (
	DefaultTable   = "fxelection_leases"
	DefaultChannel = "fxelection_wake"
)

// ErrInvalidIdentifier is returned by New for a table, schema or channel
// name that is not a plain SQL identifier: a letter or underscore followed by
// letters, digits or underscores, at most 63 bytes. Such names are rejected
// rather than quoted, so a configuration value can never inject SQL.
var ErrInvalidIdentifier = errors.New("pglease: invalid identifier")

// DB is what the backend needs of a connection pool. *pgxpool.Pool
// satisfies it; wrap a pool (tracing, metrics) by embedding it. Acquire is
// used only for the push wake-up listener, which takes one connection from
// the pool and hijacks it (see Options.DisablePush).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

var _ DB = (*pgxpool.Pool)(nil)

// Options configure a Backend. The zero value uses the defaults.
type Options struct {
	// Table is the lease table's name. Default: "fxelection_leases".
	Table string
	// Schema is the table's schema. Default: "" (the connection's
	// search_path decides).
	Schema string
	// SkipCreateTable stops the backend from creating the table when it is
	// missing; operators then create it themselves (CreateTableStatement).
	// Default: false (created on first use).
	SkipCreateTable bool
	// Channel is the LISTEN/NOTIFY channel for wake-ups. Default:
	// "fxelection_wake".
	Channel string
	// DisablePush turns the LISTEN wake-up off: no connection is held for
	// it and followers notice a release at their next retry. Release still
	// sends NOTIFY, for other processes that listen. Set it behind a
	// transaction-mode pooler (PgBouncer), where LISTEN cannot work.
	// Default: false (push on).
	DisablePush bool
	// Logger receives the push listener's connection problems (the only
	// problems the backend does not return to a caller). Default (nil):
	// none.
	Logger *slog.Logger
}

// normalize fills in defaults and validates the names; label names a field
// in errors ("Options.Table", or the config module's JSON key "table").
func (o Options) normalize(label func(field string) string) (Options, error) {
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if o.Channel == "" {
		o.Channel = DefaultChannel
	}
	for _, f := range []struct{ field, value string }{
		{"Table", o.Table}, {"Channel", o.Channel}, {"Schema", o.Schema},
	} {
		if f.field == "Schema" && f.value == "" {
			continue
		}
		if err := pgident.Check(ErrInvalidIdentifier, label(f.field), f.value); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Validate checks opts without I/O: Table, Schema and Channel must be
// valid identifiers (an error naming the field, matching
// ErrInvalidIdentifier). New and the fxelection.backends.postgres module
// both call it.
func (o Options) Validate() error {
	_, err := o.normalize(optionLabel)
	return err
}

func optionLabel(field string) string { return "Options." + field }

// qualifiedTable returns the quoted, schema-qualified table name.
func (o Options) qualifiedTable() string { return pgident.Qualified(o.Schema, o.Table) }

// CreateTableStatement returns the CREATE TABLE statement for opts' table,
// for operators who create it themselves (with SkipCreateTable). It
// returns an error matching ErrInvalidIdentifier for a bad name.
func CreateTableStatement(opts Options) (string, error) {
	opts, err := opts.normalize(optionLabel)
	if err != nil {
		return "", err
	}
	return createTableSQL(opts.qualifiedTable()), nil
}
