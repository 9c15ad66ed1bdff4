package pglease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Backend is the PostgreSQL lease backend. It implements fxelection.Backend,
// backendkit.Notifier (push wake-up via LISTEN/NOTIFY),
// backendkit.NamedBackend, backendkit.BatchRenewer,
// backendkit.BatchAcquirer and backendkit.Transferer. It is safe for concurrent use; create one per
// pool and share it between the process's elections.
type Backend struct {
	// Redacting and RedactingBatches are the operations' one way out:
	// Acquire, Renew, Release, Get, Transfer, RenewBatch and AcquireBatch
	// call the unexported methods below and redact every error with the
	// configuration's passwords (whatever pgx or the server put in a
	// message).
	backendkit.Redacting
	backendkit.RedactingBatches

	db    DB
	opts  Options
	table string // quoted, qualified

	sql statements

	ensured  atomic.Bool
	ensuring chan struct{} // a lock that honours contexts

	push *pusher
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.Notifier     = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.BatchRenewer = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
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
func New(db DB, opts Options) (*Backend, error) { return newBackend(db, opts) }

// newBackend is New, with secrets to redact beside the pool's passwords
// (the config module's DSN spellings of them).
func newBackend(db DB, opts Options, secrets ...string) (*Backend, error) {
	if p, isPool := db.(*pgxpool.Pool); db == nil || (isPool && p == nil) {
		return nil, errors.New("pglease: DB is required")
	}
	opts, err := opts.normalize(optionLabel)
	if err != nil {
		return nil, err
	}
	b := &Backend{db: db, opts: opts, table: opts.qualifiedTable(), ensuring: make(chan struct{}, 1)}
	if p, ok := db.(*pgxpool.Pool); ok {
		secrets = append(configSecrets(p.Config().ConnConfig.Config), secrets...)
	}
	b.sql = buildStatements(b.table)
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: b.acquire, Renew: b.renew, Release: b.release, Get: b.get,
		Transfer: b.transfer, RenewBatch: b.renewAll, AcquireBatch: b.acquireAll,
	}, secrets...)
	b.RedactingBatches = backendkit.NewRedactingBatches(b.Redacting)
	b.push = newPusher(db, opts, b.Redact)
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
	return b.Redact(b.createTable(ctx, false, true))
}

// createTable runs the create statement (if ddl) under the Backend's lock;
// once skips it when the table was ensured meanwhile (by whoever held the
// lock before), so electors that start together create it once.
func (b *Backend) createTable(ctx context.Context, once, ddl bool) error {
	select {
	case b.ensuring <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("create table %s: %w", b.table, ctx.Err())
	}
	defer func() { <-b.ensuring }()
	if once && b.ensured.Load() {
		return nil
	}
	if ddl {
		if _, err := b.db.Exec(ctx, b.sql.ensure); err != nil {
			return fmt.Errorf("create table %s: %w", b.table, err)
		}
	}
	b.ensured.Store(true)
	return nil
}

// ensureTable creates the table (unless SkipCreateTable), once per Backend
// (again after an operation found the table missing). Concurrent first
// operations wait for one creation and do not repeat it.
func (b *Backend) ensureTable(ctx context.Context) error {
	if b.ensured.Load() {
		return nil
	}
	return b.createTable(ctx, true, !b.opts.SkipCreateTable)
}

// stmts returns the backend's statements.
func (b *Backend) stmts() *statements { return &b.sql }

// storeErr wraps a store failure for op. A missing table (dropped, or not
// created by the operator) makes the next operation create it again.
func (b *Backend) storeErr(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "42P01": // undefined_table
			b.ensured.Store(false)
			if b.opts.SkipCreateTable {
				return fmt.Errorf("%s: table %s does not exist (create it, or unset SkipCreateTable): %w", op, b.table, err)
			}
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// maxAcquireAttempts bounds how often Acquire retries when the row changes
// hands between its statement and its re-read.
const maxAcquireAttempts = 3

// acquire is Acquire (see backendkit.Redacting), implementing
// fxelection.Backend with one INSERT … ON CONFLICT DO UPDATE statement: it
// takes the lease if the row is missing, released, expired by the server's
// now(), or held by req.Identity (at once, whatever the incarnation). The
// term stays the same only when req continues its own unexpired lease
// (req.Continues: the same identity and, when req.Incarnation is set, the
// incarnation recorded with the row's term); otherwise it becomes the larger
// of one more than the row's and the server's clock in microseconds (see the
// package documentation), or, at backendkit.MaxTerm, Acquire fails with an
// error matching backendkit.ErrTermExhausted. The returned lease carries
// req.Incarnation. Concurrent
// candidates are serialised by the row lock, so exactly one of them wins.
// Held by someone else: a *backendkit.HeldError with the holder; a row it
// cannot decode: an error matching backendkit.ErrInvalidRecord (the row is
// never taken over before it expires, except by the identity it names, and
// then only if its term is positive: that row is the caller's own, and
// Acquire rewrites it).
func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	md, err := checkAcquire(req)
	if err != nil {
		return fxelection.Lease{}, err
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
		sql := b.stmts()
		err := b.db.QueryRow(ctx, sql.acquire, acquireArgs(req, md)...).Scan(append([]any{&won}, r.dest()...)...)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			found = false
		case err != nil:
			return fxelection.Lease{}, b.storeErr("acquire lease", err)
		}
		if l, err, again := b.acquired(ctx, req, won, found, r); !again {
			return l, err
		}
	}
	return fxelection.Lease{}, errors.New("acquire lease: the row kept changing during the attempt")
}

// checkAcquire checks req before the acquire statement and returns its
// metadata as JSON.
func checkAcquire(req backendkit.AcquireRequest) (string, error) {
	return checkRequest("acquire lease", req)
}

// checkRequest checks req before a statement that writes the row Acquire
// writes (op names the operation in errors) and returns its metadata as
// JSON.
func checkRequest(op string, req backendkit.AcquireRequest) (string, error) {
	if req.Identity == "" {
		return "", fmt.Errorf("%s: empty identity", op)
	}
	if req.Duration <= 0 || req.Duration > backendkit.MaxRecordDuration {
		return "", fmt.Errorf("%s: duration %v is not in (0, %v]", op, req.Duration, backendkit.MaxRecordDuration)
	}
	if err := req.Validate(); err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	md := req.Metadata
	if md == nil {
		md = map[string]string{}
	}
	mdJSON, err := json.Marshal(md)
	if err != nil {
		return "", fmt.Errorf("%s: encode metadata: %w", op, err)
	}
	return string(mdJSON), nil
}

// acquireArgs are the acquire statement's arguments for req.
func acquireArgs(req backendkit.AcquireRequest, md string) []any {
	return []any{req.Election, req.Identity, md, durationMS(req.Duration), req.Incarnation}
}

// acquired decides an acquisition from what the acquire statement
// returned: won and the row r, or found false when it returned no row.
// again reports that the row changed hands meanwhile and the statement
// must be run again.
func (b *Backend) acquired(ctx context.Context, req backendkit.AcquireRequest, won, found bool, r row) (_ fxelection.Lease, _ error, again bool) {
	if won {
		l, err := r.lease(req.Election)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err), false
		}
		return l, nil, false
	}
	// Refused. The row the statement returned comes from its snapshot,
	// which predates a row a concurrent winner committed while we waited
	// for its lock; if it does not explain the refusal, read again.
	if !found || !r.held() || (r.holder != nil && *r.holder == req.Identity) {
		var err error
		r, found, err = b.read(ctx, req.Election)
		if err != nil {
			return fxelection.Lease{}, b.storeErr("acquire lease", err), false
		}
	}
	if found && !r.held() && r.term != nil && *r.term >= backendkit.MaxTerm {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: election %q: %w", req.Election, backendkit.ErrTermExhausted), false
	}
	if !found || !r.held() {
		return fxelection.Lease{}, nil, true // freed meanwhile: try again
	}
	cur, err := r.lease(req.Election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err), false
	}
	if cur.Holder != req.Identity {
		return fxelection.Lease{}, &backendkit.HeldError{Holder: cur}, false
	}
	if !req.Continues(cur) && cur.Term >= backendkit.MaxTerm {
		// Ours, but a new leadership (another incarnation) would need a
		// term above the largest.
		return fxelection.Lease{}, fmt.Errorf("acquire lease: election %q: %w", req.Election, backendkit.ErrTermExhausted), false
	}
	// Ours and valid now, though the statement refused: changed
	// meanwhile; try again.
	return fxelection.Lease{}, nil, true
}

// read returns election's row with a fresh snapshot.
func (b *Backend) read(ctx context.Context, election string) (row, bool, error) {
	var r row
	err := b.db.QueryRow(ctx, b.stmts().get, election).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, err
	}
	return r, true, nil
}

// renew is Renew (see backendkit.Redacting), implementing fxelection.Backend
// with one UPDATE that matches the election, holder and term and an
// unexpired lease (by the server's now()), and sets the expiry to now() +
// lease.Duration. No matching row: an error matching
// backendkit.ErrLeaseLost. A row whose holder and term match is the
// caller's, so it is extended even if a foreign writer damaged its other
// columns. The returned lease is lease with the new expiry, Incarnation
// included as given (not compared with the row: a new incarnation would have
// changed the term).
func (b *Backend) renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if lease.Term == 0 || lease.Term > math.MaxInt64 || lease.Holder == "" {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	if lease.Duration <= 0 || lease.Duration > backendkit.MaxRecordDuration {
		return fxelection.Lease{}, fmt.Errorf("renew lease: duration %v is not in (0, %v]", lease.Duration, backendkit.MaxRecordDuration)
	}
	if err := b.ensureTable(ctx); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	var exp pgtype.Timestamptz
	err := b.db.QueryRow(ctx, b.stmts().renew, lease.Election, lease.Holder, int64(lease.Term), durationMS(lease.Duration)).Scan(&exp)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	case err != nil:
		return fxelection.Lease{}, b.storeErr("renew lease", err)
	}
	out := lease.Clone()
	out.ExpiresAt = exp.Time
	return out, nil
}

// renewAll is RenewBatch (see backendkit.RedactingBatches), implementing
// backendkit.BatchRenewer with one UPDATE over all the leases' rows (unnest
// of arrays of names, holders, terms and durations), one round trip, under
// the same conditions as Renew for each row: election, holder and term match
// and the lease has not expired by the server's now(). Each lease gets what
// Renew would have returned for it: a lease whose row did not match gets an
// error matching backendkit.ErrLeaseLost while the others are renewed; a
// failure of the statement fails them all. With a DB that has no Query
// method (see DB), the leases are renewed one statement each.
func (b *Backend) renewAll(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	out := make([]backendkit.RenewResult, len(leases))
	q, ok := b.db.(querier)
	if !ok {
		for i, l := range leases {
			out[i].Lease, out[i].Err = b.renew(ctx, l)
		}
		return out
	}
	b.renewBatch(ctx, q, leases, out)
	return out
}

// renewKey identifies one lease's row match in a batch.
type renewKey struct {
	name, holder string
	term         int64
}

func (b *Backend) renewBatch(ctx context.Context, q querier, leases []fxelection.Lease, out []backendkit.RenewResult) {
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
			out[i].Err = fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
		case l.Duration <= 0 || l.Duration > backendkit.MaxRecordDuration:
			out[i].Err = fmt.Errorf("renew lease: duration %v is not in (0, %v]", l.Duration, backendkit.MaxRecordDuration)
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
	rows, err := q.Query(ctx, b.stmts().renewBatch, names, holders, terms, durs)
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
			out[i].Err = fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
			continue
		}
		l = l.Clone()
		l.ExpiresAt = exp
		out[i].Lease = l
	}
}

// release is Release (see backendkit.Redacting), implementing
// fxelection.Backend with one statement that frees the row if election,
// holder and term match and, when lease.ExpiresAt is not zero, the row's
// expires_at equals lease.ExpiresAt (holder NULL, expired now; the term
// stays for the next holder to exceed), and sends pg_notify on the channel
// with the election's name. Releasing a lease that is not ours changes
// nothing and returns nil.
//
// The expiry check makes a release free the lease only as the releaser
// last wrote it: Acquire, Renew and RenewBatch return the row's expires_at
// (microsecond precision) in ExpiresAt, and every later acquire or renewal
// moves it, including a re-acquire by the same incarnation, which keeps
// the term. So a delayed Release of an earlier incarnation of a holder (its
// statement held up by a partition and executed after a restarted process
// with the same identity re-acquired, with a higher term anyway, or after
// a request naming no incarnation re-acquired with the same term) is a
// no-op instead of freeing the new incarnation's lease. The price: a Release after a renewal whose result
// the caller never saw (the statement ran but the reply was lost) matches
// nothing either, and the lease then runs out at its expiry. A Lease with a
// zero ExpiresAt (built by hand rather than returned by the backend) is
// matched on election, holder and term only, without that protection.
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
	if _, err := b.db.Exec(ctx, b.stmts().release, lease.Election, lease.Holder, int64(lease.Term), b.opts.Channel, expires); err != nil {
		return b.storeErr("release lease", err)
	}
	return nil
}

// transfer is Transfer (see backendkit.Redacting), implementing
// backendkit.Transferer with one statement: an UPDATE that matches the row
// exactly as Release does (election, holder and term, and expires_at when
// lease.ExpiresAt is not zero) and, further, an unexpired lease by the
// server's now(), and rewrites it as Acquire would write it for req on a
// free lease: holder req.Identity, req.Metadata, req.Incarnation, acquired
// now() and expiring
// req.Duration after now(), with a new term by Acquire's rule (the larger of
// the row's term plus one and the server's clock in microseconds), so
// strictly above every term of the election. The same statement sends
// pg_notify on Options.Channel with the election's name, as Release does
// (names of 8000 bytes or more go unannounced); it is delivered when the
// statement commits, with the new row. The row is never free in between: a
// subscriber woken by it, or any other candidate, finds the lease held by
// req.Identity until it expires.
//
// A lease that is no longer the caller's (no row, another holder or term,
// an expires_at moved by a later acquire or renewal, a lease released or
// expired) is left as it is, and Transfer returns an error matching
// backendkit.ErrLeaseLost; so does a lease with a zero term or holder. A
// Lease with a zero ExpiresAt is matched on holder and term alone, as in
// Release. A lease at backendkit.MaxTerm cannot be transferred (no higher
// term exists): Transfer changes nothing and returns an error matching
// backendkit.ErrTermExhausted if the row is still that lease, read in a
// separate statement, or ErrLeaseLost if not. req is checked as Acquire
// checks it, and req.Election must be lease.Election; otherwise Transfer
// returns an error without running any statement. A store failure is
// returned as such, and the transfer may or may not have happened (the
// reply can be lost after the commit): Get tells.
func (b *Backend) transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	md, err := checkRequest("transfer lease", req)
	if err != nil {
		return fxelection.Lease{}, err
	}
	if req.Election != lease.Election {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: the request is for election %q, the lease of election %q", req.Election, lease.Election)
	}
	if lease.Term == 0 || lease.Term > math.MaxInt64 || lease.Holder == "" {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost) // cannot be a lease of ours
	}
	if err := b.ensureTable(ctx); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	if lease.Term >= backendkit.MaxTerm {
		return fxelection.Lease{}, b.transferAtMaxTerm(ctx, lease)
	}
	var expires any // NULL: not checked
	if !lease.ExpiresAt.IsZero() {
		expires = lease.ExpiresAt
	}
	sql := b.stmts()
	args := []any{lease.Election, lease.Holder, int64(lease.Term), b.opts.Channel, expires, req.Identity, md, durationMS(req.Duration), req.Incarnation}
	var (
		r        row
		notified int64 // notifications sent: 1, or 0 for a name too long
	)
	err = b.db.QueryRow(ctx, sql.transfer, args...).Scan(append(r.dest(), &notified)...)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
	case err != nil:
		return fxelection.Lease{}, b.storeErr("transfer lease", err)
	}
	l, err := r.lease(req.Election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	return l, nil
}

// transferAtMaxTerm is Transfer's answer for a lease at MaxTerm, which the
// transfer statement never matches: ErrTermExhausted if the row is still
// that lease, as Release would match it and live, else ErrLeaseLost.
func (b *Backend) transferAtMaxTerm(ctx context.Context, lease fxelection.Lease) error {
	r, found, err := b.read(ctx, lease.Election)
	if err != nil {
		return b.storeErr("transfer lease", err)
	}
	if found && r.held() && *r.holder == lease.Holder && r.term != nil && uint64(*r.term) == lease.Term &&
		(lease.ExpiresAt.IsZero() || (r.expiresAt.Valid && r.expiresAt.InfinityModifier == pgtype.Finite && r.expiresAt.Time.Equal(lease.ExpiresAt))) {
		return fmt.Errorf("transfer lease: election %q: %w", lease.Election, backendkit.ErrTermExhausted)
	}
	return fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
}

// get is Get (see backendkit.Redacting), implementing fxelection.Backend
// with one SELECT. A missing row, a released one (holder NULL) or one
// expired by the server's now() gives backendkit.ErrNoLease; an undecodable
// live row gives an error matching backendkit.ErrInvalidRecord.
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
		return fxelection.Lease{}, backendkit.ErrNoLease
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
