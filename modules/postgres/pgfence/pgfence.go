// Package pgfence guards writes to PostgreSQL with fxelection's fencing
// term: Check, called inside the caller's own transaction, records the
// highest term seen per election in a small table and refuses the
// transaction when the caller's term is lower.
//
//	ran, err := elector.RunIfLeader(ctx, func(ctx context.Context) error {
//		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//			if err := guard.Check(ctx, tx); err != nil { // term from ctx
//				return err // errors.Is(err, fence.ErrStaleTerm): deposed
//			}
//			_, err := tx.Exec(ctx, `UPDATE accounts SET …`)
//			return err
//		})
//	})
//
// How it stays safe under concurrency: Check is one statement,
//
//	INSERT INTO fxelection_fence AS f (election, term) VALUES ($1, $2)
//	ON CONFLICT (election) DO UPDATE SET term = excluded.term, updated_at = now()
//	WHERE f.term <= excluded.term
//	RETURNING f.term
//
// which takes the election's row lock and keeps it until the transaction
// ends. Guarded transactions of one election therefore commit one at a time
// in the order their checks passed, and a check that waits for the lock
// re-reads the row a newer term committed (READ COMMITTED), so once a
// transaction with term T has committed, no transaction with a lower term
// can commit. Under REPEATABLE READ or SERIALIZABLE a check that raced a
// newer term fails with a serialization error instead (SQLSTATE 40001):
// retry the transaction, and the retry gets ErrStaleTerm.
//
// Costs and limits: one round trip and one row update per guarded
// transaction; guarded transactions of the same election wait for each
// other from the check to their end, so keep them short (transactions of
// different elections do not wait for each other). The guard fences only
// transactions that call Check: writes made outside them are not protected.
// Pass the outermost transaction: on a stale term Check rolls tx back, and
// rolling back a nested (savepoint) transaction would not undo the outer
// one's writes.
//
// Fail-over: the guard is as durable as the database it lives in. A
// fail-over to an asynchronous standby loses the commits the standby had
// not received, a newer term's among them, and a writer with an older term
// then commits until the newer term commits again (RELIABILITY.md, "Store
// fail-over and durability"). For a fence that must survive fail-overs use
// synchronous replication for its database (synchronous_standby_names with
// synchronous_commit on or remote_apply), or have the leader run a guarded
// transaction after every fail-over.
//
// The fence table need not live in the database that holds the leases; it
// belongs in the database that receives the writes. Create it once, or let
// CreateTable do it (see CreateTableStatement for operators):
//
//	CREATE TABLE IF NOT EXISTS fxelection_fence (
//		election   text        PRIMARY KEY,
//		term       bigint      NOT NULL CHECK (term > 0),
//		updated_at timestamptz NOT NULL DEFAULT now()
//	)
package pgfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/modules/postgres/internal/pgident"
)

// DefaultTable is the fence table's name when Options.Table is empty.
const DefaultTable = "fxelection_fence"

// ErrInvalidIdentifier is returned by New and CreateTableStatement for a
// table or schema name that is not a plain SQL identifier: a letter or
// underscore followed by letters, digits or underscores, at most 63 bytes.
// Such names are rejected rather than quoted, so a configuration value can
// never inject SQL (accepted names are quoted as well).
var ErrInvalidIdentifier = errors.New("pgfence: invalid identifier")

// Options configure a Guard. The zero value uses the defaults.
type Options struct {
	// Table is the fence table's name. Default: "fxelection_fence".
	Table string
	// Schema is the table's schema. Default: "" (the connection's
	// search_path decides).
	Schema string
}

// Execer runs a statement: *pgxpool.Pool, *pgx.Conn and pgx.Tx satisfy it.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Guard checks fencing terms against one fence table. It holds no
// connection and is safe for concurrent use.
type Guard struct {
	create, check, read string
}

// New returns a Guard for opts' table. It validates the names (an error
// matching ErrInvalidIdentifier names the field) and does no I/O.
func New(opts Options) (*Guard, error) {
	table, err := qualified(opts)
	if err != nil {
		return nil, err
	}
	return &Guard{
		create: createSQL(table),
		check: `INSERT INTO ` + table + ` AS f (election, term) VALUES ($1, $2)
ON CONFLICT (election) DO UPDATE SET term = excluded.term, updated_at = now()
WHERE f.term <= excluded.term
RETURNING f.term`,
		read: `SELECT term FROM ` + table + ` WHERE election = $1`,
	}, nil
}

// CreateTableStatement returns the CREATE TABLE IF NOT EXISTS statement for
// opts' table, for operators who create it themselves. It returns an error
// matching ErrInvalidIdentifier for a bad name.
func CreateTableStatement(opts Options) (string, error) {
	table, err := qualified(opts)
	if err != nil {
		return "", err
	}
	return createSQL(table), nil
}

func createSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	election   text        PRIMARY KEY,
	term       bigint      NOT NULL CHECK (term > 0),
	updated_at timestamptz NOT NULL DEFAULT now()
)`
}

// CreateTable creates the fence table if it does not exist. Concurrent
// calls from several processes may race: one of them can fail with a
// unique-violation on the catalog, which a retry resolves.
func (g *Guard) CreateTable(ctx context.Context, db Execer) error {
	if _, err := db.Exec(ctx, g.create); err != nil {
		return fmt.Errorf("pgfence: create table: %w", backendkit.RedactError(err))
	}
	return nil
}

// Check fences the transaction tx with the token in ctx (fence.FromContext:
// the leader context's lease, or a token set with fence.WithToken). It
// raises the election's recorded term to the caller's and keeps the row
// locked until tx ends, so tx can commit only while no higher term has been
// recorded. When a higher term is already recorded it rolls tx back and
// returns a *fence.StaleTermError (matching fence.ErrStaleTerm); the caller
// must not retry with the same term. A ctx without a token gives
// fence.ErrNoToken; an out-of-range term or election name an error matching
// fence.ErrInvalidToken. Other errors are the database's (redacted); after
// any error, roll tx back.
func (g *Guard) Check(ctx context.Context, tx pgx.Tx) error {
	tok, err := fence.FromContext(ctx)
	if err != nil {
		return err
	}
	if tx == nil {
		return errors.New("pgfence: tx is nil")
	}
	var stored int64
	err = tx.QueryRow(ctx, g.check, tok.Election, int64(tok.Term)).Scan(&stored)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("pgfence: check term: %w", backendkit.RedactError(err))
	}
	// The row exists with a higher term (locked by us now). Read it for the
	// error, then roll back so a Commit that ignores the error cannot
	// succeed.
	stale := &fence.StaleTermError{Election: tok.Election, Term: tok.Term}
	if err := tx.QueryRow(ctx, g.read, tok.Election).Scan(&stored); err == nil && stored > 0 {
		stale.Highest = uint64(stored)
	}
	_ = tx.Rollback(ctx)
	return stale
}

func qualified(opts Options) (string, error) {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if err := pgident.Check(ErrInvalidIdentifier, "Options.Table", opts.Table); err != nil {
		return "", err
	}
	if opts.Schema != "" {
		if err := pgident.Check(ErrInvalidIdentifier, "Options.Schema", opts.Schema); err != nil {
			return "", err
		}
	}
	return pgident.Qualified(opts.Schema, opts.Table), nil
}
