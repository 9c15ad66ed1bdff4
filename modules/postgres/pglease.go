// Package pglease is the PostgreSQL backend for fxelection: one row per
// election in a lease table, changed only by single autocommit statements
// that decide expiry by the server's clock.
//
// Each operation is one statement: Acquire is INSERT … ON CONFLICT (name)
// DO UPDATE … WHERE the lease is free, expired by now() or already ours;
// Renew is an UPDATE that matches holder, term and an unexpired lease;
// Release is an UPDATE that frees our own row and sends pg_notify in the
// same statement; Get is a SELECT.
//
// Release frees the row only as the releaser last saw it: holder, term and
// expires_at must all match the Lease that Acquire, Renew or RenewBatch
// returned (they return the row's expires_at in ExpiresAt). Any later
// acquire or renewal, even a re-acquire by the same identity (which keeps
// the term), turns a stale release into a no-op, so a delayed release from
// an earlier incarnation of a restarted holder cannot free the lease its
// successor holds. A Lease with a zero ExpiresAt (built by hand) is
// released on holder and term alone, without that guarantee; a release
// after a renewal whose reply was lost frees nothing and the lease expires. No client clock is ever compared with
// the server's or another client's: every expiry decision uses the
// server's now().
//
// The term column is a real fencing token: it increases whenever the lease
// starts anew (another holder, or the same holder after its lease expired
// or was released) and stays the same while one holder renews. A released
// row is kept with holder NULL, so the term survives release, restarts and
// fail-overs of the database like any committed row.
//
// Terms are clock-seeded, as the Redis backend's: a new lease's term is the
// larger of the row's term plus one and the database server's clock in
// microseconds since the Unix epoch (clock_timestamp()), so terms look like
// 1764512345678901. This keeps them rising when the row is deleted out of
// band (an operator's DELETE or TRUNCATE, a dropped and re-created table):
// the next term is the clock, which is past every term handed out before.
// A sequence was the alternative; it was not chosen because it is one more
// object that the same cleanup can drop or reset (DROP TABLE … CASCADE,
// TRUNCATE … RESTART IDENTITY, a schema restored without it), it is shared
// by all elections of the table, and it needs CREATE privileges on its
// own; the clock needs nothing that can be deleted. What can still make a
// term repeat or go backwards: the row is deleted (or the database
// restored from an older backup) AND the server's clock then reads earlier
// than the last term handed out (a clock stepped back, or a fail-over to a
// server whose clock lags, by more than the time since); or a DELETE
// commits in the microseconds between a racing Acquire's reading of the
// clock and its insert of the new row. Terms stop at fxelection.MaxTerm
// (the largest bigint): Acquire then refuses a new lease with an error
// matching fxelection.ErrTermExhausted instead of overflowing, while the
// holder at MaxTerm keeps renewing.
//
// Rows are hostile input: every row read is validated with
// Lease.Validate and backendkit.DurationFromMillis (a printable UTF-8
// holder without control characters, metadata that is a JSON object of
// printable UTF-8 strings within the size limit, a term in [1, MaxTerm], a
// duration in (0, MaxRecordDuration], a finite expiry). A row that fails
// gives an error matching fxelection.ErrInvalidRecord that quotes no stored
// text, and a live one is never taken over before it expires by the
// server's clock, except by the identity it names (the caller's own row,
// which Acquire rewrites) when its term is positive.
//
// Secrets: every error a Backend returns (and its listener logs) passes
// through backendkit.RedactError with the pool's password, as pgx resolved
// it (from the connection string, PGPASSWORD or a passfile) when db is a
// *pgxpool.Pool; the fxelection.backends.postgres module (ConfigModule)
// adds the DSN's password in every spelling libpq accepts (spaces or tabs
// around "=", quotes, escapes, URL user info or query) and redacts its own
// errors the same way.
//
// No session state: unlike a session advisory lock, leadership is not tied
// to a connection. The backend works through PgBouncer in transaction
// pooling mode and survives pool connection recycling (MaxConnLifetime),
// pg_terminate_backend and reconnects; a renew succeeds on whichever
// connection runs it. Behind a transaction-mode pooler: set DisablePush
// (LISTEN needs a session), and unless the pooler supports protocol-level
// prepared statements (PgBouncer 1.21+ with max_prepared_statements), add
// default_query_exec_mode=exec to the pool's connection string.
//
// Push wake-up: Release notifies the channel Options.Channel with the
// election's name; each Backend listens on one connection of its own and
// wakes the electors waiting for that election, so they acquire within
// milliseconds. While the listener is down it reconnects with backoff and
// electors poll every RetryPeriod as usual.
//
// The table (see CreateTableStatement) is created on first use unless
// Options.SkipCreateTable is set: once per Backend, however many electors
// share it and start at once (they wait for the one creation), and again
// only after an operation found the table missing. Creation is idempotent
// and safe when many processes start at once.
package pglease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/modules/postgres/internal/pgident"
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
	// errors the backend does not return to a caller). Default (nil): none.
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
// for operators who create it themselves (with SkipCreateTable). It returns
// an error matching ErrInvalidIdentifier for a bad name.
func CreateTableStatement(opts Options) (string, error) {
	opts, err := opts.normalize(optionLabel)
	if err != nil {
		return "", err
	}
	return createTableSQL(opts.qualifiedTable()), nil
}

func createTableSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	name        text        PRIMARY KEY,
	holder      text,
	metadata    jsonb       NOT NULL DEFAULT '{}',
	term        bigint      NOT NULL DEFAULT 0,
	duration_ms bigint      NOT NULL DEFAULT 0,
	acquired_at timestamptz,
	renewed_at  timestamptz,
	expires_at  timestamptz NOT NULL DEFAULT '-infinity'
)`
}

// Backend is the PostgreSQL lease backend. It implements fxelection.Backend,
// fxelection.Notifier (push wake-up via LISTEN/NOTIFY) and
// fxelection.NamedBackend. It is safe for concurrent use; create one per
// pool and share it between the process's elections.
type Backend struct {
	db    DB
	opts  Options
	table string // quoted, qualified
	sql   statements

	ensured  atomic.Bool
	ensuring chan struct{} // a lock that honours contexts

	push *pusher

	secrets []string // passwords of the pool's configuration, redacted from every error
}

type statements struct {
	ensure, acquire, renew, renewBatch, release, get string
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ fxelection.Notifier     = (*Backend)(nil)
	_ fxelection.NamedBackend = (*Backend)(nil)
	_ fxelection.BatchRenewer = (*Backend)(nil)
)

// querier is what RenewBatch needs beyond DB to renew many rows in one
// statement; *pgxpool.Pool has it. A DB without it renews one lease at a
// time.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// New returns a backend storing leases in db. It validates opts (an error
// naming the option, matching ErrInvalidIdentifier, for a bad name) and
// does no I/O, so it succeeds while the database is down: the table is
// created on first use, and until the database answers every operation
// returns a store error (which the elector reports and backs off on). Call
// CreateTable to fail fast instead.
//
// The backend never closes db: the application owns its pool.
func New(db DB, opts Options) (*Backend, error) {
	if p, isPool := db.(*pgxpool.Pool); db == nil || (isPool && p == nil) {
		return nil, errors.New("pglease: DB is required")
	}
	opts, err := opts.normalize(optionLabel)
	if err != nil {
		return nil, err
	}
	b := &Backend{db: db, opts: opts, table: opts.qualifiedTable(), ensuring: make(chan struct{}, 1)}
	if p, ok := db.(*pgxpool.Pool); ok {
		b.secrets = configSecrets(p.Config().ConnConfig.Config)
	}
	b.sql = buildStatements(b.table)
	b.push = newPusher(db, opts, b.redact)
	return b, nil
}

// configSecrets returns the password of a parsed connection configuration
// (from the connection string, PGPASSWORD or a passfile, as pgx resolved it).
func configSecrets(cfg pgconn.Config) []string {
	if cfg.Password == "" {
		return nil
	}
	return []string{cfg.Password}
}

// redact passes an error leaving the backend through backendkit.RedactError
// with the configuration's passwords: whatever pgx or the server put in a
// message, no password leaves. errors.Is and errors.As for HeldError keep
// working.
func (b *Backend) redact(err error) error {
	if err == nil {
		return nil
	}
	return backendkit.RedactError(err, b.secrets...)
}

// clockTermSQL is the server's clock in microseconds since the Unix epoch,
// taken when the statement computes the new row; maxTermSQL is
// fxelection.MaxTerm, the largest bigint.
const (
	clockTermSQL = `floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`
	maxTermSQL   = `9223372036854775807`
)

func buildStatements(table string) statements {
	// The advisory lock serialises creators across processes: a plain
	// CREATE TABLE IF NOT EXISTS can still fail with a unique violation on
	// pg_type when two sessions run it at once. The existence check comes
	// first so that a role without CREATE on the schema can use a table an
	// operator created.
	ensure := `DO $fxelection$
BEGIN
	IF to_regclass('` + table + `') IS NULL THEN
		PERFORM pg_advisory_xact_lock(hashtext('fxelection create ` + table + `'));
		` + createTableSQL(table) + `;
	END IF;
END
$fxelection$`

	// One statement: take the lease if the row is missing, released, expired
	// by the server's clock, or ours; otherwise return the row as the
	// statement's snapshot saw it (won = false). A lease that starts anew
	// gets the larger of the row's term plus one and the server's clock in
	// microseconds (the new row's term), so terms keep rising when the row
	// is deleted. A row at the largest bigint is not taken (Acquire then
	// reports ErrTermExhausted) rather than overflow.
	acquire := `WITH up AS (
	INSERT INTO ` + table + ` AS l (name, holder, metadata, term, duration_ms, acquired_at, renewed_at, expires_at)
	VALUES ($1, $2, $3::text::jsonb, ` + clockTermSQL + `, $4::bigint, now(), now(), now() + $4::bigint * interval '1 millisecond')
	ON CONFLICT (name) DO UPDATE SET
		holder      = excluded.holder,
		metadata    = excluded.metadata,
		duration_ms = excluded.duration_ms,
		renewed_at  = excluded.renewed_at,
		expires_at  = excluded.expires_at,
		term        = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.term ELSE greatest(l.term + 1, excluded.term) END,
		acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.acquired_at ELSE excluded.acquired_at END
	WHERE (l.holder = excluded.holder AND l.expires_at > now() AND l.term > 0)
		OR ((l.holder IS NULL OR l.expires_at <= now()) AND coalesce(l.term, 0) < ` + maxTermSQL + `)
	RETURNING l.holder, l.metadata::text AS metadata, l.term, l.duration_ms, l.acquired_at, l.expires_at
)
SELECT true, holder, metadata, term, duration_ms, acquired_at, expires_at, true FROM up
UNION ALL
SELECT false, holder, metadata::text, term, duration_ms, acquired_at, expires_at, coalesce(expires_at > now(), true)
FROM ` + table + ` WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM up)`

	renew := `UPDATE ` + table + `
SET renewed_at = now(), duration_ms = $4::bigint, expires_at = now() + $4::bigint * interval '1 millisecond'
WHERE name = $1 AND holder = $2 AND term = $3::bigint AND expires_at > now()
RETURNING expires_at`

	// Renew for many leases at once: the same conditions per row, matched
	// against arrays of names, holders, terms and durations.
	renewBatch := `UPDATE ` + table + ` AS l
SET renewed_at = now(), duration_ms = v.d, expires_at = now() + v.d * interval '1 millisecond'
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS v(name, holder, term, d)
WHERE l.name = v.name AND l.holder = v.holder AND l.term = v.term AND l.expires_at > now()
RETURNING l.name, l.holder, l.term, l.expires_at`

	// NOTIFY payloads are limited to 8000 bytes; longer names go unannounced
	// (followers then poll) rather than failing the release. $5 is the
	// releaser's expires_at (NULL: not checked): any acquire or renewal
	// since the releaser last heard from the store moved it, so a stale
	// release (a delayed statement of an earlier incarnation) matches nothing.
	release := `WITH r AS (
	UPDATE ` + table + `
	SET holder = NULL, metadata = '{}', renewed_at = now(), expires_at = now()
	WHERE name = $1 AND holder = $2 AND term = $3::bigint
		AND ($5::timestamptz IS NULL OR expires_at = $5::timestamptz)
	RETURNING name
)
SELECT pg_notify($4::text, name) FROM r WHERE octet_length(name) < 8000`

	get := `SELECT holder, metadata::text, term, duration_ms, acquired_at, expires_at, coalesce(expires_at > now(), true)
FROM ` + table + ` WHERE name = $1`

	return statements{ensure: ensure, acquire: acquire, renew: renew, renewBatch: renewBatch, release: release, get: get}
}

// BackendName returns "postgres".
func (b *Backend) BackendName() string { return "postgres" }

// Table returns the quoted, schema-qualified name of the lease table.
func (b *Backend) Table() string { return b.table }

// CreateTable creates the lease table if it is missing, idempotently and
// safely when many instances do it at once. Operations do this themselves
// on first use (unless SkipCreateTable); call it at start-up to find a
// missing privilege or an unreachable database early. It runs even with
// SkipCreateTable set.
func (b *Backend) CreateTable(ctx context.Context) error {
	return b.redact(b.createTable(ctx, false))
}

// createTable runs the create statement under the Backend's lock; once
// skips it when the table was ensured meanwhile (by whoever held the lock
// before), so electors that start together create it once.
func (b *Backend) createTable(ctx context.Context, once bool) error {
	select {
	case b.ensuring <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("create table %s: %w", b.table, ctx.Err())
	}
	defer func() { <-b.ensuring }()
	if once && b.ensured.Load() {
		return nil
	}
	if _, err := b.db.Exec(ctx, b.sql.ensure); err != nil {
		return fmt.Errorf("create table %s: %w", b.table, err)
	}
	b.ensured.Store(true)
	return nil
}

// ensureTable creates the table once per Backend (again after an operation
// found it missing), unless told not to. Concurrent first operations wait
// for one creation and do not repeat it.
func (b *Backend) ensureTable(ctx context.Context) error {
	if b.opts.SkipCreateTable || b.ensured.Load() {
		return nil
	}
	return b.createTable(ctx, true)
}

// storeErr wraps a store failure for op. A missing table (dropped, or not
// created by the operator) makes the next operation create it again.
func (b *Backend) storeErr(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		b.ensured.Store(false)
		if b.opts.SkipCreateTable {
			return fmt.Errorf("%s: table %s does not exist (create it, or unset SkipCreateTable): %w", op, b.table, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// row is a lease row as scanned, NULLs allowed, so foreign rows decode
// into ErrInvalidRecord rather than scan errors.
type row struct {
	holder     *string
	metadata   *string
	term       *int64
	durationMS *int64
	acquiredAt pgtype.Timestamptz
	expiresAt  pgtype.Timestamptz
	live       bool // expires_at > now() (or NULL)
}

func (r *row) dest() []any {
	return []any{&r.holder, &r.metadata, &r.term, &r.durationMS, &r.acquiredAt, &r.expiresAt, &r.live}
}

// held reports whether the row is a lease somebody holds now.
func (r *row) held() bool { return r.holder != nil && r.live }

// lease decodes r and validates every field with Lease.Validate and
// backendkit.DurationFromMillis: a printable UTF-8 holder, metadata that is
// a JSON object of printable UTF-8 strings, a term in [1, MaxTerm], a
// duration in (0, MaxRecordDuration], a finite expiry. Anything off gives
// an error matching ErrInvalidRecord that quotes no stored text.
func (r *row) lease(election string) (fxelection.Lease, error) {
	bad := func(what string) (fxelection.Lease, error) {
		return fxelection.Lease{}, fmt.Errorf("%w: election %q: %s", fxelection.ErrInvalidRecord, election, what)
	}
	switch {
	case r.holder == nil || *r.holder == "":
		return bad("empty holder")
	case r.term == nil || *r.term <= 0:
		return bad("term not positive")
	case r.durationMS == nil:
		return bad("duration_ms is NULL")
	case !r.expiresAt.Valid || r.expiresAt.InfinityModifier != pgtype.Finite:
		return bad("expires_at not a finite time")
	case r.metadata == nil:
		return bad("metadata is NULL")
	}
	dur, err := backendkit.DurationFromMillis(*r.durationMS)
	if err != nil {
		return bad("duration_ms out of range")
	}
	md, err := decodeMetadata(*r.metadata)
	if err != nil {
		return bad(err.Error())
	}
	l := fxelection.Lease{
		Holder:    *r.holder,
		Metadata:  md,
		Term:      uint64(*r.term),
		Duration:  dur,
		ExpiresAt: r.expiresAt.Time,
	}
	if r.acquiredAt.Valid && r.acquiredAt.InfinityModifier == pgtype.Finite {
		l.AcquiredAt = r.acquiredAt.Time
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("election %q: %w", election, err)
	}
	l.Election = election // the row's key, chosen by the caller
	return l, nil
}

// decodeMetadata decodes the metadata column's text: a JSON object of
// strings, in valid UTF-8 (encoding/json would silently turn bad bytes into
// U+FFFD). CheckLease then checks the strings themselves.
func decodeMetadata(s string) (map[string]string, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("metadata is not UTF-8")
	}
	if t := strings.TrimSpace(s); !strings.HasPrefix(t, "{") {
		return nil, errors.New("metadata is not a JSON object")
	}
	var md map[string]string
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		return nil, errors.New("metadata is not a JSON object of strings")
	}
	return md, nil
}

// durationMS returns d in whole milliseconds, rounded up, at least 1.
func durationMS(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}

// maxAcquireAttempts bounds how often Acquire retries when the row changes
// hands between its statement and its re-read.
const maxAcquireAttempts = 3

// Acquire implements fxelection.Backend with one INSERT … ON CONFLICT DO
// UPDATE statement: it takes the lease if the row is missing, released,
// expired by the server's now(), or held by req.Identity. The term stays
// the same only when req.Identity re-acquires its own unexpired lease;
// otherwise it becomes the larger of one more than the row's and the
// server's clock in microseconds (see the package documentation), or, at
// fxelection.MaxTerm, Acquire fails with an error matching
// fxelection.ErrTermExhausted. Concurrent candidates are
// serialised by the row lock, so exactly one of them wins. Held by someone
// else: a *fxelection.HeldError with the holder; a row it cannot decode: an
// error matching fxelection.ErrInvalidRecord (the row is never taken over
// before it expires, except by the identity it names, and then only if its
// term is positive: that row is the caller's own, and Acquire rewrites it).
func (b *Backend) Acquire(ctx context.Context, req fxelection.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.acquire(ctx, req)
	return l, b.redact(err)
}

func (b *Backend) acquire(ctx context.Context, req fxelection.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	if req.Identity == "" {
		return fxelection.Lease{}, errors.New("acquire lease: empty identity")
	}
	if req.Duration <= 0 || req.Duration > fxelection.MaxRecordDuration {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: duration %v is not in (0, %v]", req.Duration, fxelection.MaxRecordDuration)
	}
	md := req.Metadata
	if md == nil {
		md = map[string]string{}
	}
	mdJSON, err := json.Marshal(md)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: encode metadata: %w", err)
	}
	if err := b.ensureTable(ctx); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	for range maxAcquireAttempts {
		var (
			r     row
			won   bool
			found = true
		)
		err := b.db.QueryRow(ctx, b.sql.acquire, req.Election, req.Identity, string(mdJSON), durationMS(req.Duration)).
			Scan(append([]any{&won}, r.dest()...)...)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			found = false
		case err != nil:
			return fxelection.Lease{}, b.storeErr("acquire lease", err)
		}
		if won {
			l, err := r.lease(req.Election)
			if err != nil {
				return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
			}
			return l, nil
		}
		// Refused. The row the statement returned comes from its snapshot,
		// which predates a row a concurrent winner committed while we waited
		// for its lock; if it does not explain the refusal, read again.
		if !found || !r.held() || (r.holder != nil && *r.holder == req.Identity) {
			r, found, err = b.read(ctx, req.Election)
			if err != nil {
				return fxelection.Lease{}, b.storeErr("acquire lease", err)
			}
		}
		if found && !r.held() && r.term != nil && *r.term >= fxelection.MaxTerm {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: election %q: %w", req.Election, fxelection.ErrTermExhausted)
		}
		if !found || !r.held() {
			continue // freed meanwhile: try again
		}
		cur, err := r.lease(req.Election)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		if cur.Holder != req.Identity {
			return fxelection.Lease{}, &fxelection.HeldError{Holder: cur}
		}
		// Ours and valid now, though the statement refused: changed
		// meanwhile; try again.
	}
	return fxelection.Lease{}, errors.New("acquire lease: the row kept changing during the attempt")
}

// read returns election's row with a fresh snapshot.
func (b *Backend) read(ctx context.Context, election string) (row, bool, error) {
	var r row
	err := b.db.QueryRow(ctx, b.sql.get, election).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, err
	}
	return r, true, nil
}

// Renew implements fxelection.Backend with one UPDATE that matches the
// election, holder and term and an unexpired lease (by the server's now()),
// and sets the expiry to now() + lease.Duration. No matching row: an error
// matching fxelection.ErrLeaseLost. A row whose holder and term match is the
// caller's, so it is extended even if a foreign writer damaged its other
// columns.
func (b *Backend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	l, err := b.renew(ctx, lease)
	return l, b.redact(err)
}

func (b *Backend) renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if lease.Term == 0 || lease.Term > math.MaxInt64 || lease.Holder == "" {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", fxelection.ErrLeaseLost)
	}
	if lease.Duration <= 0 || lease.Duration > fxelection.MaxRecordDuration {
		return fxelection.Lease{}, fmt.Errorf("renew lease: duration %v is not in (0, %v]", lease.Duration, fxelection.MaxRecordDuration)
	}
	if err := b.ensureTable(ctx); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	var exp pgtype.Timestamptz
	err := b.db.QueryRow(ctx, b.sql.renew, lease.Election, lease.Holder, int64(lease.Term), durationMS(lease.Duration)).Scan(&exp)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", fxelection.ErrLeaseLost)
	case err != nil:
		return fxelection.Lease{}, b.storeErr("renew lease", err)
	}
	out := lease.Clone()
	out.ExpiresAt = exp.Time
	return out, nil
}

// RenewBatch implements fxelection.BatchRenewer with one UPDATE over all
// the leases' rows (unnest of arrays of names, holders, terms and
// durations), one round trip, under the same conditions as Renew for each
// row: election, holder and term match and the lease has not expired by
// the server's now(). Each lease gets what Renew would have returned for
// it: a lease whose row did not match gets an error matching
// fxelection.ErrLeaseLost while the others are renewed; a failure of the
// statement fails them all. With a DB that has no Query method (see DB),
// the leases are renewed one statement each.
func (b *Backend) RenewBatch(ctx context.Context, leases []fxelection.Lease) []fxelection.RenewResult {
	out := make([]fxelection.RenewResult, len(leases))
	q, ok := b.db.(querier)
	if !ok {
		for i, l := range leases {
			out[i].Lease, out[i].Err = b.Renew(ctx, l)
		}
		return out
	}
	b.renewBatch(ctx, q, leases, out)
	for i := range out {
		out[i].Err = b.redact(out[i].Err)
	}
	return out
}

// renewKey identifies one lease's row match in a batch.
type renewKey struct {
	name, holder string
	term         int64
}

func (b *Backend) renewBatch(ctx context.Context, q querier, leases []fxelection.Lease, out []fxelection.RenewResult) {
	failAll := func(err error) {
		for i := range out {
			if out[i].Err == nil {
				out[i].Err = err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		failAll(fmt.Errorf("renew lease: %w", err))
		return
	}
	n := len(leases)
	names, holders := make([]string, 0, n), make([]string, 0, n)
	terms, durs := make([]int64, 0, n), make([]int64, 0, n)
	for i, l := range leases {
		switch {
		case l.Term == 0 || l.Term > math.MaxInt64 || l.Holder == "":
			out[i].Err = fmt.Errorf("renew lease: %w", fxelection.ErrLeaseLost)
		case l.Duration <= 0 || l.Duration > fxelection.MaxRecordDuration:
			out[i].Err = fmt.Errorf("renew lease: duration %v is not in (0, %v]", l.Duration, fxelection.MaxRecordDuration)
		default:
			names, holders = append(names, l.Election), append(holders, l.Holder)
			terms, durs = append(terms, int64(l.Term)), append(durs, durationMS(l.Duration))
		}
	}
	if len(names) == 0 {
		return
	}
	if err := b.ensureTable(ctx); err != nil {
		failAll(fmt.Errorf("renew lease: %w", err))
		return
	}
	renewed := make(map[renewKey]time.Time, len(names))
	rows, err := q.Query(ctx, b.sql.renewBatch, names, holders, terms, durs)
	if err == nil {
		for rows.Next() {
			var (
				k   renewKey
				exp pgtype.Timestamptz
			)
			if err = rows.Scan(&k.name, &k.holder, &k.term, &exp); err != nil {
				break
			}
			renewed[k] = exp.Time
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		failAll(b.storeErr("renew lease", err))
		return
	}
	for i, l := range leases {
		if out[i].Err != nil {
			continue
		}
		exp, ok := renewed[renewKey{l.Election, l.Holder, int64(l.Term)}]
		if !ok {
			out[i].Err = fmt.Errorf("renew lease: %w", fxelection.ErrLeaseLost)
			continue
		}
		l = l.Clone()
		l.ExpiresAt = exp
		out[i].Lease = l
	}
}

// Release implements fxelection.Backend with one statement that frees the
// row if election, holder and term match and, when lease.ExpiresAt is not
// zero, the row's expires_at equals lease.ExpiresAt (holder NULL, expired
// now; the term stays for the next holder to exceed), and sends pg_notify
// on the channel with the election's name. Releasing a lease that is not
// ours changes nothing and returns nil.
//
// The expiry check makes a release free the lease only as the releaser
// last wrote it: Acquire, Renew and RenewBatch return the row's expires_at
// (microsecond precision) in ExpiresAt, and every later acquire or renewal
// moves it, including a re-acquire by the same identity, which keeps the
// term. So a delayed Release of an earlier incarnation of a holder (its
// statement held up by a partition and executed after a restarted process
// with the same identity re-acquired) is a no-op instead of freeing the new
// incarnation's lease. The price: a Release after a renewal whose result
// the caller never saw (the statement ran but the reply was lost) matches
// nothing either, and the lease then runs out at its expiry. A Lease with a
// zero ExpiresAt (built by hand rather than returned by the backend) is
// matched on election, holder and term only, without that protection.
func (b *Backend) Release(ctx context.Context, lease fxelection.Lease) error {
	return b.redact(b.release(ctx, lease))
}

func (b *Backend) release(ctx context.Context, lease fxelection.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if lease.Term == 0 || lease.Term > math.MaxInt64 || lease.Holder == "" {
		return nil // cannot be a lease of ours
	}
	if err := b.ensureTable(ctx); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	var expires any // NULL: not checked
	if !lease.ExpiresAt.IsZero() {
		expires = lease.ExpiresAt
	}
	if _, err := b.db.Exec(ctx, b.sql.release, lease.Election, lease.Holder, int64(lease.Term), b.opts.Channel, expires); err != nil {
		return b.storeErr("release lease", err)
	}
	return nil
}

// Get implements fxelection.Backend with one SELECT. A missing row, a
// released one (holder NULL) or one expired by the server's now() gives
// fxelection.ErrNoLease; an undecodable live row gives an error matching
// fxelection.ErrInvalidRecord.
func (b *Backend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	l, err := b.get(ctx, election)
	return l, b.redact(err)
}

func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	if err := b.ensureTable(ctx); err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	r, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, b.storeErr("get lease", err)
	}
	if !found || !r.held() {
		return fxelection.Lease{}, fxelection.ErrNoLease
	}
	l, err := r.lease(election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	return l, nil
}

// Close stops the push listener, if one runs. It never closes the DB
// passed to New (the fxelection.backends.postgres module closes the pool
// it built in its Cleanup). After Close, Subscribe does nothing; Close is
// idempotent and returns nil.
func (b *Backend) Close() error {
	b.push.close()
	return nil
}
