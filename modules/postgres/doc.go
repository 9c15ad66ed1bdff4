// Package pglease is the PostgreSQL backend for fxelection: one row per
// election in a lease table, changed only by single autocommit statements
// that decide expiry by the server's clock.
//
//	b, err := pglease.New(pool, pglease.Options{}) // or pglease.Module in fx
//
// # Summary
//
//   - Expiry: server-authoritative, by the server's now() against the
//     row's expires_at. No client clock is compared with another's.
//   - Fencing term: a term column that survives release; a new lease's term
//     is the larger of the row's term plus one and the server's clock in
//     microseconds (clock_timestamp()), so it survives a DELETE or TRUNCATE
//     too (see the terms paragraph below).
//   - Push wake-up: Release and Transfer send pg_notify on
//     Options.Channel; each Backend LISTENs on one connection of its own,
//     taken from the pool and hijacked (one connection beyond the pool's
//     MaxConns while any subscription is open).
//   - Failover: a crashed leader's row expires LeaseDuration after its last
//     renewal's statement, and a follower takes it at its next retry:
//     within LeaseDuration + 1.2 × RetryPeriod of that renewal, plus a round
//     trip. A released lease is taken within milliseconds (push).
//   - Batching: Backend implements backendkit.BatchRenewer (one UPDATE …
//     FROM unnest(…) over every row of the batch) and
//     backendkit.BatchAcquirer (the acquire statements in one pipeline on
//     one connection, a Sync after each, so that each holds its row lock
//     only for its own transaction).
//   - Hand-over: Backend implements backendkit.Transferer (used by
//     Elector.ResignTo): one statement ends the caller's lease, matched as
//     Release matches it, and writes the successor's record with a new
//     term, so the lease is never free in between.
//   - Logging: the push listener logs its connection problems and
//     reconnections to Options.Logger (none by default); the
//     config module also warns when its pool is still closing at app stop.
//     Every other failure is an error returned to the caller.
//   - What it cannot promise: a fail-over to an asynchronous standby can
//     lose the last commits, so two candidates may briefly both lead; terms
//     still rise if the servers' clocks agree. A leader whose database is
//     back within RenewDeadline keeps its lease; otherwise it steps down and
//     the next leader has a higher term. Measured: no two leaders and no
//     repeated term in 1,000 promotions of a standby after a SIGKILL of
//     its primary. Never read leases through a reader or replica endpoint
//     (see Standbys and reader endpoints).
//
// Each decision is one statement: Acquire is INSERT … ON CONFLICT (name)
// DO UPDATE … WHERE the lease is free, expired by now() or held by our
// identity (whatever the incarnation: see below);
// Renew is an UPDATE that matches holder, term and an unexpired lease;
// Release is an UPDATE that frees our own row and sends pg_notify in the
// same statement; Transfer is an UPDATE that rewrites our own live row
// (matched as by Release) as Acquire would write it for another request on
// a free lease, with a new term, and sends pg_notify in the same
// statement; Get is a SELECT. Acquire may run its statement up to three
// times: when the row changed hands between the statement and the re-read
// that reports the holder, it tries again rather than report a holder that
// is already gone.
//
// Release frees the row only as the releaser last saw it: holder, term and
// expires_at must all match the Lease that Acquire, Renew or RenewBatch
// returned (they return the row's expires_at in ExpiresAt). Any later
// acquire or renewal, even a re-acquire by the same incarnation (which
// keeps the term), turns a stale release into a no-op, so a delayed release
// from an earlier incarnation of a restarted holder cannot free the lease
// its successor holds (that successor also has a higher term). A Lease with a zero ExpiresAt (built by hand) is
// released on holder and term alone, without that guarantee; a release
// after a renewal whose reply was lost frees nothing and the lease expires.
//
// No client clock is ever compared with the server's or another client's:
// every expiry decision uses the server's now().
//
// The term column is a real fencing token: it increases whenever the lease
// starts anew (another holder; a new incarnation of the same identity; the
// same holder after its lease expired or was released) and stays the same
// while one holder renews. A released row is kept with holder NULL, so the
// term survives release, restarts and fail-overs of the database like any
// committed row.
//
// Incarnations: the row records the incarnation token of the Acquire that
// started its term (backendkit.AcquireRequest.Incarnation; column
// incarnation, written with every term), and Acquire, Renew and Get return
// it in Lease.Incarnation. An Acquire keeps
// the term only when it continues the live row's leadership: the same
// holder and, when the request names an incarnation, the one recorded for
// the row's current term (a retry whose reply was lost). The same identity
// with another incarnation (a process restarted with a fixed Identity,
// while its predecessor may only be paused) takes the lease at once,
// without waiting for expiry, and gets a new term by the same rule as a
// new holder, strictly above every earlier term of the row; the
// predecessor's Renew and Release then match nothing, and every fencing
// guard (pgfence) refuses its writes. A request without an incarnation
// keeps the holder's term (the Elector's hand-over hint names none, so
// that a successor that holds the lease already keeps its term).
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
// clock and its insert of the new row. Terms stop at backendkit.MaxTerm
// (the largest bigint): Acquire then refuses a new lease with an error
// matching backendkit.ErrTermExhausted instead of overflowing, while the
// holder at MaxTerm keeps renewing.
//
// Rows are hostile input: every row read is validated with
// Lease.Validate and backendkit.DurationFromMillis (a printable UTF-8
// holder without control characters, metadata that is a JSON object of
// printable UTF-8 strings within the size limit, a term in [1, MaxTerm], a
// duration in (0, MaxRecordDuration], a finite expiry). A row that fails
// gives an error matching backendkit.ErrInvalidRecord that quotes no stored
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
// Push wake-up: Release and Transfer notify the channel Options.Channel
// with the election's name; each Backend listens on one connection of its
// own and wakes the electors waiting for that election, so they acquire
// within milliseconds. While the listener is down it reconnects with backoff
// (100ms doubling to 5s, jittered) and electors poll every RetryPeriod as
// usual.
//
// The table (see CreateTableStatement) is created on first use unless
// Options.SkipCreateTable is set: once per Backend, however many electors
// share it and start at once (they wait for the one creation), and again
// only after an operation found the table missing. Creation is idempotent and safe when many processes
// start at once. Options.Schema must name a schema that exists: the backend
// creates its table, never a schema, and without a start hook calling
// CreateTable a missing schema or privilege shows only as election errors,
// retried with backoff.
//
// # Standbys and reader endpoints
//
// Point the pool at the primary only. A standby (a streaming replica, a
// cloud reader endpoint, a pooler that balances over replicas, a
// multi-host connection string without target_session_attrs=read-write)
// refuses every statement that changes a lease (a read-only transaction:
// a store failure, retried with backoff, never a lease held by someone
// else), and what it reads is only what it has replayed: with asynchronous
// replication Get and the watcher there show a past leader, and a
// follower that routes work by it may send it to a deposed one (Jepsen
// found RDS Multi-AZ clusters violating snapshot isolation across their
// endpoints, 2025).
// The fencing guard (pgfence) belongs in the primary too: a check on a
// standby fails the same way.
//
// A fail-over to an asynchronous standby (pg_ctl promote, pg_promote(),
// Patroni, RDS) loses the commits the standby had not received. Terms
// survive it as well as the clocks agree: a lost acquisition's term was
// read from the old primary's clock, and the next one is the larger of the
// standby's row plus one and the new primary's clock. A lost renewal or
// acquisition can give two believing leaders until the old holder's next
// renewal on the new primary fails, which is at most RenewDeadline after
// its last successful one.
//
// Measured (RELIABILITY.md, "Store fail-over and durability"; 3 elections of
// 3 candidates, LeaseDuration 2 s, RenewDeadline 1.3 s, RetryPeriod 300 ms,
// a pgfence-guarded insert every 20 ms): 1,000 promotions of an asynchronous
// standby after a SIGKILL of its primary (at once, or after a pause of up to
// 2 s) lost acknowledged commits in 13 of them (894 of 821,910 probe
// commits) and changed the term in 662 (a resignation just before the fault,
// or a leader that could not renew through the pause), and no two electors
// believed they led at once: no lost commit let a second candidate take a
// lease. No term repeated or went back, and pgfence accepted no stale write. A guard
// whose own newer commit the fail-over lost is another matter: see pgfence.
//
// # Configuration
//
// The configuration-document module fxelection.backends.postgres
// (ConfigModule) builds a pool of its own from these settings. Table,
// schema and channel names are letters, digits and underscores, at most 63
// bytes, quoted as identifiers.
//
//   - dsn (required, a secret): the pgx connection string or URL. Validate
//     parses it (no network, though like libpq it may read the passfile or
//     service file); the password never appears in errors.
//   - table: Options.Table (default "fxelection_leases").
//   - schema: Options.Schema (default: the connection's search_path).
//   - channel: Options.Channel (default "fxelection_wake").
//   - skip_create_table: Options.SkipCreateTable (default false).
//   - disable_push: Options.DisablePush (default false; set it behind a
//     transaction-mode pooler).
//   - close_timeout: how long the module's clean-up waits for its pool to
//     close at app stop (default 500ms, never past fx's stop deadline);
//     after it the close finishes in the background (pgx waits up to 15 s
//     per connection for a server that does not answer).
package pglease
